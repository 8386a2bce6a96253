package mcpupstream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolgate/toolgate/internal/redact"
	"github.com/toolgate/toolgate/registry"
)

// stableAfter is how long a connection must last for the next restart to
// wait the shortest backoff again.
const stableAfter = time.Minute

// server is one upstream server while it runs: its connection, and the
// tools it put in the registry.
type server struct {
	cfg    Server
	opts   Options
	reg    *registry.Registry
	log    *slog.Logger
	client *mcp.Client
	pins   *pinState
	up     prometheus.Gauge // nil without metrics
	// relist asks for the tools to be listed again (the upstream said
	// they changed, or the pins did).
	relist chan struct{}

	mu      sync.Mutex
	conn    *conn           // nil while down
	secrets *redact.Secrets // the current connection's
	// exchange is the current connection's TokenExchange for its tools.
	exchange *registry.TokenExchange
	// changed is closed, and replaced, whenever conn changes.
	changed chan struct{}
	// tools are the tools registered, by slug; versions the last version
	// registered of every slug, kept after a tool is removed so that one
	// coming back gets a higher version.
	tools    map[string]*served
	versions map[string]int
	status   Status
}

// Status is how an upstream server is doing.
type Status struct {
	ID string
	// Up is true while the server is connected and its tools listed.
	Up bool
	// Tools counts the tools it serves.
	Tools int
	// Error says why it is down, when it is.
	Error string
	// Since is when Up last changed.
	Since time.Time
}

func newServer(cfg Server, opts Options, reg *registry.Registry, pins *pinState, up prometheus.Gauge) *server {
	s := &server{
		cfg: cfg, opts: opts, reg: reg, pins: pins, up: up,
		log:      opts.Logger.With("mcpServer", cfg.ID),
		relist:   make(chan struct{}, 1),
		changed:  make(chan struct{}),
		tools:    map[string]*served{},
		versions: map[string]int{},
		status:   Status{ID: cfg.ID, Error: "not started yet", Since: time.Now()},
	}
	if s.cfg.CallTimeout == 0 {
		s.cfg.CallTimeout = DefaultCallTimeout
	}
	s.client = mcp.NewClient(&mcp.Implementation{Name: "toolgate", Title: "toolgate gateway", Version: "1"}, &mcp.ClientOptions{
		// The SDK's own log could quote what the upstream sent.
		Logger: slog.New(slog.DiscardHandler),
		// No roots: the gateway has none to give, and answers no request
		// back (refuseRequestsBack).
		Capabilities:                &mcp.ClientCapabilities{},
		ToolListChangedHandler:      func(context.Context, *mcp.ToolListChangedRequest) { s.relistSoon() },
		LoggingMessageHandler:       s.upstreamLog,
		ProgressNotificationHandler: s.upstreamProgress,
		// An answer asking for input would have the client send the call
		// again; a call is sent once.
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
	})
	s.client.AddReceivingMiddleware(refuseRequestsBack)
	return s
}

// refuseRequestsBack answers an upstream's requests for sampling,
// elicitation and roots with an error: the gateway stands between agents
// and servers, and has no model, person or files to lend a server.
func refuseRequestsBack(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "sampling/createMessage", "elicitation/create", "roots/list":
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "the toolgate gateway does not answer " + method + " requests from the servers it calls"}
		}
		return next(ctx, method, req)
	}
}

func (s *server) relistSoon() {
	select {
	case s.relist <- struct{}{}:
	default:
	}
}

// upstreamLog puts a log message of the upstream in the gateway's log, as
// the upstream's words: cut short, without secrets.
func (s *server) upstreamLog(ctx context.Context, req *mcp.LoggingMessageRequest) {
	p := req.Params
	if p == nil {
		return
	}
	var level slog.Level
	switch p.Level {
	case "debug":
		level = slog.LevelDebug
	case "notice", "info":
		level = slog.LevelInfo
	case "warning":
		level = slog.LevelWarn
	default:
		level = slog.LevelError
	}
	s.mu.Lock()
	secrets := s.secrets
	s.mu.Unlock()
	s.log.Log(ctx, level, "MCP server log message", "upstreamLevel", string(p.Level),
		"logger", excerpt(secrets, p.Logger), "message", excerpt(secrets, fmt.Sprint(p.Data)))
}

// upstreamProgress puts a progress notification of the upstream in the
// gateway's log.
func (s *server) upstreamProgress(ctx context.Context, req *mcp.ProgressNotificationClientRequest) {
	p := req.Params
	if p == nil {
		return
	}
	s.mu.Lock()
	secrets := s.secrets
	s.mu.Unlock()
	s.log.DebugContext(ctx, "MCP server progress", "progress", p.Progress, "total", p.Total, "message", excerpt(secrets, p.Message))
}

// run keeps the server connected until ctx is done: it connects, lists and
// registers its tools, relists them when told to, and starts over with a
// growing wait when the connection ends or fails. firstDone is called once
// the first attempt has connected or failed.
func (s *server) run(ctx context.Context, firstDone func()) {
	var once sync.Once
	ready := func() { once.Do(firstDone) }
	defer ready()
	backoff := s.opts.MinBackoff
	for {
		began := time.Now()
		err := s.connectAndServe(ctx, ready)
		ready()
		if ctx.Err() != nil {
			s.setDown("stopped")
			return
		}
		s.setDown(err.Error())
		s.log.Warn("MCP server is down; starting it again later", "error", err.Error(), "retryIn", backoff.String())
		if time.Since(began) >= stableAfter {
			backoff = s.opts.MinBackoff
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			s.setDown("stopped")
			return
		case <-t.C:
		}
		backoff = min(2*backoff, s.opts.MaxBackoff)
	}
}

// connectAndServe connects once, and serves the connection until it ends
// (an error saying why) or ctx is done (nil).
func (s *server) connectAndServe(ctx context.Context, ready func()) error {
	c, err := s.connect(ctx)
	if err != nil {
		return err
	}
	defer s.closeConn(c)
	s.setConn(c)
	listCtx, cancel := context.WithTimeout(ctx, s.opts.StartTimeout)
	err = s.sync(listCtx, c)
	cancel()
	if err != nil {
		return err
	}
	s.setUp()
	ready()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-c.ended:
			return s.endedError(c)
		case <-s.relist:
			listCtx, cancel := context.WithTimeout(ctx, s.opts.StartTimeout)
			err := s.sync(listCtx, c)
			cancel()
			var clash *clashError
			switch {
			case errors.As(err, &clash):
				return err
			case err != nil && !c.isEnded():
				s.log.Warn("listing the MCP server's tools failed; keeping those listed before", "error", s.clean(err))
			}
		}
	}
}

// connect starts the server (a command) or reaches it (a URL), and does
// the MCP handshake, within StartTimeout.
func (s *server) connect(ctx context.Context) (*conn, error) {
	d, err := s.transport()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.StartTimeout)
	defer cancel()
	if d.proc != nil {
		// Should the handshake hang, the process is asked to end rather
		// than waited for.
		stop := context.AfterFunc(ctx, d.proc.terminate)
		defer stop()
	}
	session, err := s.client.Connect(ctx, d.transport, nil)
	if err != nil {
		why := "cannot start or reach it"
		if ctx.Err() != nil {
			why = fmt.Sprintf("it did not start within %s", s.opts.StartTimeout)
		}
		if d.proc != nil {
			// Failing the handshake, the SDK waited for the process.
			d.proc.killRest()
			if tail := excerpt(redact.New(d.secrets...), d.proc.stderr()); tail != "" {
				return nil, fmt.Errorf("%s: %s; its standard error ends: %s", why, s.cleanWith(err, d.secrets), tail)
			}
		}
		return nil, fmt.Errorf("%s: %s", why, s.cleanWith(err, d.secrets))
	}
	if caps := session.InitializeResult().Capabilities; caps != nil && caps.Logging != nil {
		// Servers send log messages once told a level; they go to the
		// gateway's log.
		_ = session.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"})
	}
	c := &conn{session: session, proc: d.proc, http: d.http, ended: make(chan struct{})}
	go func() {
		_ = session.Wait()
		close(c.ended)
	}()
	s.mu.Lock()
	s.secrets = redact.New(d.secrets...)
	s.exchange = d.exchange
	s.mu.Unlock()
	return c, nil
}

// endedError says why a connection ended on its own.
func (s *server) endedError(c *conn) error {
	if c.proc != nil {
		c.proc.stop(func() { _ = c.session.Close() })
		msg := "the process exited"
		s.mu.Lock()
		secrets := s.secrets
		s.mu.Unlock()
		if tail := excerpt(secrets, c.proc.stderr()); tail != "" {
			msg += "; its standard error ends: " + tail
		}
		return errors.New(msg)
	}
	return errors.New("the connection ended")
}

// closeConn ends a connection: its process is stopped (SIGTERM, then
// SIGKILL), its session closed.
func (s *server) closeConn(c *conn) {
	s.mu.Lock()
	if s.conn == c {
		s.conn = nil
		close(s.changed)
		s.changed = make(chan struct{})
	}
	s.mu.Unlock()
	if c.proc != nil {
		c.proc.stop(func() { _ = c.session.Close() })
		return
	}
	_ = c.session.Close()
}

func (s *server) setConn(c *conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.conn = c
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *server) setUp() {
	s.mu.Lock()
	s.status.Up, s.status.Error, s.status.Since = true, "", time.Now()
	s.status.Tools = len(s.tools)
	n := len(s.tools)
	s.mu.Unlock()
	if s.up != nil {
		s.up.Set(1)
	}
	s.log.Info("MCP server is up", "tools", n)
}

func (s *server) setDown(why string) {
	s.mu.Lock()
	if s.status.Up {
		s.status.Since = time.Now()
	}
	s.status.Up, s.status.Error = false, why
	s.mu.Unlock()
	if s.up != nil {
		s.up.Set(0)
	}
}

func (s *server) currentStatus() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.status
	st.Tools = len(s.tools)
	return st
}

// clean is an error's text fit for a log line or status: without secrets,
// cut short.
func (s *server) clean(err error) string {
	s.mu.Lock()
	secrets := s.secrets
	s.mu.Unlock()
	return excerpt(secrets, err.Error())
}

func (s *server) cleanWith(err error, secrets []string) string {
	return excerpt(redact.New(secrets...), err.Error())
}

// clashError is two upstream tools mapping to one slug: the server is
// stopped until the upstream or the config changes.
type clashError struct{ error }

// sync lists the upstream's tools and brings the registry in line with
// them: new tools registered, changed ones given a new version, gone ones
// removed.
func (s *server) sync(ctx context.Context, c *conn) error {
	var listed []*mcp.Tool
	for t, err := range c.session.Tools(ctx, nil) {
		if err != nil {
			return fmt.Errorf("listing its tools: %s", s.clean(err))
		}
		listed = append(listed, t)
	}
	s.mu.Lock()
	secrets := s.secrets
	s.mu.Unlock()
	tools, skipped, err := s.cfg.serve(listed, secrets)
	if err != nil {
		s.removeAll()
		return &clashError{err}
	}
	for _, name := range skipped {
		s.log.Warn("an upstream tool is not served: its name makes no valid slug, holds a secret, or its schemas cannot be used",
			"upstreamTool", excerpt(secrets, name))
	}
	s.apply(tools)
	return nil
}

// apply registers tools as the server's current tools, under the pins now
// in force: a tool whose digest and pin are as registered stays as it is.
func (s *server) apply(tools map[string]*served) {
	s.mu.Lock()
	defer s.mu.Unlock()
	required, pinned := s.pins.get()
	now := time.Now().UTC()
	for _, slug := range slices.Sorted(maps.Keys(tools)) {
		sv := tools[slug]
		pin := pinned[slug]
		old := s.tools[slug]
		if old != nil && old.digest == sv.digest && old.pinRequired == required && old.pinned == pin {
			continue
		}
		def := *sv.tool
		up := *def.Upstream
		up.PinRequired, up.PinnedDigest = required, pin
		def.Upstream = &up
		def.Version = s.versions[slug] + 1
		def.UpdatedAt = now
		if def.Endpoint.Verified {
			def.Endpoint.VerifiedAt = &now
		}
		def.Invoke = s.invoker(sv.name, slug)
		def.TokenExchange = s.exchange
		if err := s.reg.Register(&def); err != nil {
			s.log.Error("an upstream tool cannot be registered", "tool", slug, "error", err.Error())
			continue
		}
		if sv.retrySafe != nil {
			_ = s.reg.SetTrust(slug, registry.Trust{RetrySafe: sv.retrySafe})
		}
		s.versions[slug] = def.Version
		next := *sv
		next.pinRequired, next.pinned = required, pin
		s.tools[slug] = &next
		switch {
		case old == nil:
			s.log.Info("upstream tool registered", "tool", slug, "version", def.Version, "digest", sv.digest, "pinned", !required || pin == sv.digest)
		case old.digest != sv.digest:
			s.log.Warn("upstream tool changed: a new version", "tool", slug, "version", def.Version, "digest", sv.digest, "previousDigest", old.digest, "pinned", !required || pin == sv.digest)
		default:
			s.log.Info("upstream tool pin changed", "tool", slug, "version", def.Version, "pinned", !required || pin == sv.digest)
		}
	}
	for slug := range s.tools {
		if _, ok := tools[slug]; !ok {
			_ = s.reg.Remove(slug)
			delete(s.tools, slug)
			s.log.Info("upstream tool removed", "tool", slug)
		}
	}
	s.status.Tools = len(s.tools)
}

// repin registers the current tools again under changed pins.
func (s *server) repin() {
	s.mu.Lock()
	tools := maps.Clone(s.tools)
	s.mu.Unlock()
	s.apply(tools)
}

// removeAll takes the server's tools out of the registry.
func (s *server) removeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for slug := range s.tools {
		_ = s.reg.Remove(slug)
		delete(s.tools, slug)
	}
	s.status.Tools = 0
}
