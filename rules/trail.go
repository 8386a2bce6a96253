package rules

import (
	"context"
	"sync"
)

// Trail collects the rules that took part in the decisions made for one
// request, for the request's log line: an audit of a refusal, which makes
// no execution, finds them there. Safe for concurrent use; a nil *Trail
// collects nothing.
type Trail struct {
	mu   sync.Mutex
	uses []Use
}

// Use is a rule that took part in a decision.
type Use struct {
	Name   string `json:"name"`
	Effect Effect `json:"effect"`
	Mode   Mode   `json:"mode"`
}

type trailKey struct{}

// WithTrail returns ctx carrying a new Trail, which the gateway fills in
// as it decides what the request asks.
func WithTrail(ctx context.Context) (context.Context, *Trail) {
	t := &Trail{}
	return context.WithValue(ctx, trailKey{}, t), t
}

// TrailFrom is the Trail of ctx; nil when it carries none.
func TrailFrom(ctx context.Context) *Trail {
	t, _ := ctx.Value(trailKey{}).(*Trail)
	return t
}

// Add records the rules of ms that decided something (not the pending).
func (t *Trail) Add(ms []Match) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, m := range ms {
		if !m.Pending {
			t.uses = append(t.uses, Use{Name: m.Name, Effect: m.Effect, Mode: m.Mode})
		}
	}
}

// Uses are the rules recorded, in the order they were; nil when none.
func (t *Trail) Uses() []Use {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.uses) == 0 {
		return nil
	}
	return append([]Use(nil), t.uses...)
}
