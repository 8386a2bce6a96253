package toolgatetest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/storage/memory"
	"github.com/toolgate/toolgate/toolgatetype"
	"github.com/toolgate/toolgate/tools"
)

// Options configure New. A nil *Options, and every zero field, means the
// default.
type Options struct {
	// Store keeps the gateway's state; nil means a new memory.Store.
	Store storage.Store
	// Tools are registered in a new registry of the gateway's own; nil
	// means the five built-in tools and EchoTool. An empty, non-nil slice
	// means a registry with no tools.
	Tools []*registry.Tool
	// Start is where the FakeClock starts; zero means DefaultStart.
	Start time.Time
	// Config supplies the gateway's other settings (spend controls, fee
	// rate, quote lifetime...). Its Registry, Clock and Transport are
	// replaced by the test's own.
	Config *toolgate.Config
}

// Gateway is a toolgate.Gateway ready for a unit test, together with what
// it was built from: its store, registry, clock and upstream.
type Gateway struct {
	*toolgate.Gateway
	Store    storage.Store
	Registry *registry.Registry
	Clock    *FakeClock
	Upstream *Upstream

	keys atomic.Int64
}

// New returns a gateway for t over an in-memory store, a registry of its
// own, a FakeClock and an Upstream that answers every provider in process.
// It fails t if the options do not make a gateway.
func New(t T, opts *Options) *Gateway {
	t.Helper()
	o := Options{}
	if opts != nil {
		o = *opts
	}
	if o.Store == nil {
		o.Store = memory.New()
	}
	if o.Start.IsZero() {
		o.Start = DefaultStart
	}
	reg := registry.New()
	if o.Tools == nil {
		if err := tools.RegisterAll(reg); err != nil {
			t.Fatalf("toolgatetest: register the built-in tools: %v", err)
		}
		o.Tools = []*registry.Tool{EchoTool()}
	}
	for _, tool := range o.Tools {
		if err := reg.Register(tool); err != nil {
			t.Fatalf("toolgatetest: register %s: %v", tool.Slug, err)
		}
	}
	g := &Gateway{Store: o.Store, Registry: reg, Clock: NewFakeClock(o.Start), Upstream: NewUpstream()}
	cfg := toolgate.Config{}
	if o.Config != nil {
		cfg = *o.Config
	}
	cfg.Registry, cfg.Clock, cfg.Transport = reg, g.Clock, g.Upstream
	gw, err := toolgate.New(o.Store, &cfg)
	if err != nil {
		t.Fatalf("toolgatetest: %v", err)
	}
	g.Gateway = gw
	return g
}

// MustQuote quotes tool for principal, failing t on an error.
func (g *Gateway) MustQuote(t T, principal, tool string) *toolgatetype.QuoteResult {
	t.Helper()
	q, err := g.Gateway.Quote(context.Background(), principal, tool)
	if err != nil {
		t.Fatalf("quote %s for %s: %v", tool, principal, err)
	}
	return q
}

// CallApproved makes one whole call as an agent whose user approves: it quotes
// tool for principal (failing t if the quote fails), approves the quoted
// digest when the tool has one, and calls with input under a new
// Idempotency-Key. The call's own outcome, refusals included, is returned.
func (g *Gateway) CallApproved(t T, principal, tool, input string) (*toolgatetype.CallResult, error) {
	t.Helper()
	q := g.MustQuote(t, principal, tool)
	req := ApprovedRequest(q, input, fmt.Sprintf("toolgatetest-%d", g.keys.Add(1)))
	req.Tool = tool // as the test named it, slug or id
	return g.Gateway.Call(context.Background(), principal, req)
}

// ApprovedRequest is the call an agent whose user approves sends under q:
// q's tool and quote, input, the Idempotency-Key key, and the approval of
// the quoted manifest digest when the tool has one.
func ApprovedRequest(q *toolgatetype.QuoteResult, input, key string) toolgatetype.CallRequest {
	req := toolgatetype.CallRequest{
		Tool:           q.Tool.Slug,
		QuoteID:        q.Quote.ID,
		Input:          json.RawMessage(input),
		IdempotencyKey: key,
	}
	if q.Quote.ManifestDigest != nil {
		req.ApprovalDigest = *q.Quote.ManifestDigest
	}
	return req
}

// RequireSpent fails t unless principal has been charged exactly usd
// ("0.1100") over all time, counting what is reserved for calls in flight.
func (g *Gateway) RequireSpent(t T, principal, usd string) {
	t.Helper()
	used, err := g.Store.MeasureLimits(context.Background(), principal, []storage.Limit{{Measure: storage.MeasureSpend}})
	if err != nil {
		t.Fatalf("measure the spend of %s: %v", principal, err)
	}
	if got := used[0].StringFixed(4); got != usd {
		t.Fatalf("%s has spent $%s, want $%s", principal, got, usd)
	}
}
