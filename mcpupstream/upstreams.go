package mcpupstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolgate/toolgate/internal/promshare"
	"github.com/toolgate/toolgate/registry"
)

// Upstreams are upstream MCP servers whose tools are in a registry, kept
// connected and in step with what they serve. Safe for concurrent use.
type Upstreams struct {
	reg     *registry.Registry
	servers []*server
	pins    *pinState // nil without a pins file
	opts    Options
	stop    context.CancelFunc
	wg      sync.WaitGroup
	closed  sync.Once
}

// Start connects servers to reg: each server's tools become registry tools,
// quoted, approved and called through the gateway over reg like any other.
// It waits until every server is up or has failed its first start (each
// within Options.StartTimeout, or until ctx is done): a server that cannot
// start is logged and its tools are absent, while the others serve; it is
// tried again, with a growing wait, as is one that stops later. Only a
// mistake in servers or opts, or an unreadable pins file, is an error.
//
// Close stops them all, and takes their tools out of reg.
func Start(ctx context.Context, reg *registry.Registry, servers []Server, opts *Options) (*Upstreams, error) {
	if reg == nil {
		return nil, errors.New("mcpupstream: Start needs a registry")
	}
	if err := validate(servers); err != nil {
		return nil, err
	}
	o := Options{}
	if opts != nil {
		o = *opts
	}
	o = o.withDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	u := &Upstreams{reg: reg, opts: o}
	if o.PinsFile != "" {
		u.pins = &pinState{path: o.PinsFile}
		if _, err := u.pins.load(true); err != nil {
			return nil, err
		}
	}
	up, err := upGauge(o.Metrics)
	if err != nil {
		return nil, err
	}
	run, stop := context.WithCancel(context.Background())
	u.stop = stop
	var started sync.WaitGroup
	for _, cfg := range servers {
		var g prometheus.Gauge
		if up != nil {
			g = up.WithLabelValues(cfg.ID)
			g.Set(0)
		}
		s := newServer(cfg, o, reg, u.pins, g)
		u.servers = append(u.servers, s)
		started.Add(1)
		u.wg.Add(1)
		go func() {
			defer u.wg.Done()
			s.run(run, started.Done)
		}()
	}
	if u.pins != nil {
		u.wg.Add(1)
		go func() {
			defer u.wg.Done()
			u.watchPins(run)
		}()
	}
	allStarted := make(chan struct{})
	go func() {
		started.Wait()
		close(allStarted)
	}()
	select {
	case <-allStarted:
	case <-ctx.Done():
	}
	return u, nil
}

// upGauge registers toolgate_mcp_server_up with reg, or finds the one
// another Upstreams registered there.
func upGauge(reg prometheus.Registerer) (*prometheus.GaugeVec, error) {
	if reg == nil {
		return nil, nil
	}
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "toolgate_mcp_server_up",
		Help: "1 while an upstream MCP server is connected and its tools listed, 0 otherwise, by the server's configured id.",
	}, []string{"server"})
	var errs []error
	g = promshare.Register(reg, g, &errs)
	if len(errs) > 0 {
		return nil, fmt.Errorf("mcpupstream: metrics: %w", errs[0])
	}
	return g, nil
}

// Close stops every server: processes get SIGTERM, then SIGKILL after
// Options.StopTimeout, with whatever they started; sessions are closed. Their
// tools leave the registry. Calls still running end as their connection
// does.
func (u *Upstreams) Close() error {
	u.closed.Do(func() {
		u.stop()
		u.wg.Wait()
		for _, s := range u.servers {
			s.removeAll()
		}
	})
	return nil
}

// Status reports each server, in the order given to Start.
func (u *Upstreams) Status() []Status {
	out := make([]Status, len(u.servers))
	for i, s := range u.servers {
		out[i] = s.currentStatus()
	}
	return out
}

// Health is each server's state, "up" or "down", by id: what a health
// check reports.
func (u *Upstreams) Health() map[string]string {
	out := make(map[string]string, len(u.servers))
	for _, s := range u.servers {
		state := "down"
		if s.currentStatus().Up {
			state = "up"
		}
		out[s.cfg.ID] = state
	}
	return out
}

// ReloadPins reads the pins file again now, rather than when its change is
// next noticed, and applies it.
func (u *Upstreams) ReloadPins() error {
	if u.pins == nil {
		return errors.New("mcpupstream: no pins file is configured")
	}
	changed, err := u.pins.load(true)
	if err != nil {
		return err
	}
	if changed {
		u.repin()
	}
	return nil
}

func (u *Upstreams) repin() {
	for _, s := range u.servers {
		s.repin()
	}
}

// watchPins reads the pins file again whenever it changes, until ctx is
// done. A file that cannot be read keeps the pins in force.
func (u *Upstreams) watchPins(ctx context.Context) {
	t := time.NewTicker(u.opts.PinsPollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		changed, err := u.pins.load(false)
		if err != nil {
			u.opts.Logger.Error("the pins file cannot be read; the pins in force stay", "error", err.Error())
			continue
		}
		if changed {
			u.opts.Logger.Info("the pins file changed; applying it")
			u.repin()
		}
	}
}

// Inspect connects to each server once, lists its tools, and returns the
// pins of the tools it serves now, as Start would serve them; the servers
// are stopped again. failed holds, by server id, why a server could not
// be inspected: its tools are in no pin. Only a mistake in servers or opts
// is an error.
func Inspect(ctx context.Context, servers []Server, opts *Options) (pins *Pins, failed map[string]error, err error) {
	if err := validate(servers); err != nil {
		return nil, nil, err
	}
	o := Options{}
	if opts != nil {
		o = *opts
	}
	o = o.withDefaults()
	if err := o.validate(); err != nil {
		return nil, nil, err
	}
	pins = &Pins{Tools: map[string]Pin{}}
	failed = map[string]error{}
	type inspected struct {
		tools map[string]*served
		err   error
	}
	results := make([]inspected, len(servers))
	var wg sync.WaitGroup
	for i, cfg := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := newServer(cfg, o, registry.New(), nil, nil)
			c, err := s.connect(ctx)
			if err != nil {
				results[i].err = err
				return
			}
			defer s.closeConn(c)
			listCtx, cancel := context.WithTimeout(ctx, o.StartTimeout)
			defer cancel()
			if err := s.sync(listCtx, c); err != nil {
				results[i].err = err
				return
			}
			s.mu.Lock()
			results[i].tools = s.tools
			s.mu.Unlock()
		}()
	}
	wg.Wait()
	for i, r := range results {
		if r.err != nil {
			failed[servers[i].ID] = r.err
			continue
		}
		for slug, sv := range r.tools {
			m, err := json.Marshal(registry.ManifestOf(sv.tool, sv.tool.Endpoint.Origin))
			if err != nil {
				failed[servers[i].ID] = err
				continue
			}
			pins.Tools[slug] = Pin{Digest: sv.digest, Manifest: m}
		}
	}
	return pins, failed, nil
}
