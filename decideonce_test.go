package toolgate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/storage/memory"
	"github.com/toolgate/toolgate/toolgatetype"
)

// decisions counts the reads that feed a call's decisions, each of which
// is made from one read of its source: who approves (the approvers'
// directory), the limits (the operator's spend controls), the policy (the
// operator's standing approvals) and the budgets (the token claims a
// call's budgets are found by, in its context).
type decisions struct {
	mu   sync.Mutex
	n    map[string]int
	mode toolgatetype.ApprovalMode // "": caller
}

func (d *decisions) count(what string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.n[what]++
}

func (d *decisions) take() map[string]int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := d.n
	d.n = map[string]int{}
	return n
}

func (d *decisions) ApprovalMode(context.Context, string) (toolgatetype.ApprovalMode, error) {
	d.count("approval mode")
	return d.mode, nil
}

// ApprovedPrincipals has pat approve for alice.
func (d *decisions) ApprovedPrincipals(_ context.Context, approver string) ([]string, error) {
	if approver == "pat" {
		return []string{"alice"}, nil
	}
	return nil, nil
}

func (d *decisions) SpendControls(context.Context, string) (toolgatetype.SpendControls, error) {
	d.count("limits")
	return toolgatetype.SpendControls{}, nil
}

func (d *decisions) GetApproval(context.Context, string, string) (storage.Approval, error) {
	d.count("policy")
	return storage.Approval{}, storage.ErrNotFound
}

// claimsContext counts the lookups of a call's token claims, which the
// budgets it counts in are found by.
type claimsContext struct {
	context.Context
	d *decisions
}

func (c claimsContext) Value(key any) any {
	if fmt.Sprintf("%T", key) == "toolgate.claimsKey" {
		c.d.count("budgets")
	}
	return c.Context.Value(key)
}

// decidedOnce is each decision taken once.
var decidedOnce = map[string]int{"approval mode": 1, "limits": 1, "budgets": 1, "policy": 1}

// TestEachDoorDecidesACallOnce pins that a call is decided once, whatever
// door it comes through: an HTTP quote and an HTTP call each decide what
// they need once, and an MCP tools/call (Prepare, then CallPreparedTool),
// which quotes and calls in one request, decides once too, calling from
// its quote's decision rather than deciding again. It also pins that the
// MCP call costs the store no more than the HTTP quote and call together.
func TestEachDoorDecidesACallOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		spec toolSpec
		// external: standing approvals come from the operator, whose
		// reads count the policy's decisions; else from the store, whose
		// reads the store's count pins.
		external bool
	}{{callable, true}, {paidCallable, true}, {callable, false}, {paidCallable, false}} {
		spec := tc.spec
		t.Run(fmt.Sprintf("tool=%s/external=%v", spec.slug, tc.external), func(t *testing.T) {
			t.Parallel()
			d := &decisions{n: map[string]int{}}
			store := &countingStore{Store: memory.New(), calls: map[string]int{}}
			e := newEnvWithStore(t, store, []toolSpec{spec}, func(c *toolgate.Config) {
				c.Approvers, c.SpendControls = d, d
				if tc.external {
					c.Approvals = d
				}
				c.Budgets = []toolgatetype.BudgetDefinition{{ID: "team", Members: []string{"alice"}, DailyLimitUSD: dec("100")}}
			})
			decidedOnce := maps.Clone(decidedOnce)
			if !tc.external {
				delete(decidedOnce, "policy")
			}
			ctx := claimsContext{context.Background(), d}
			slug := "echo"
			if spec.slug != "" {
				slug = spec.slug
			}
			digest := e.digest(slug)

			// The HTTP door: a quote, then a call under it.
			q, err := e.gw.Quote(ctx, "alice", slug)
			require.NoError(t, err)
			assert.Equal(t, decidedOnce, d.take(), "the HTTP quote")
			quoted := store.take()
			req := approvedCall(q, "http", "hi")
			_, err = e.gw.Call(ctx, "alice", req)
			require.NoError(t, err)
			assert.Equal(t, decidedOnce, d.take(), "the HTTP call")
			called := store.take()
			http := sum(quoted) + sum(called)

			// The MCP door: tools/call quotes and calls in one.
			p, err := e.gw.Prepare("alice", slug, json.RawMessage(`{"v":"hi"}`))
			require.NoError(t, err)
			out := e.gw.CallPreparedTool(ctx, p, "mcp", &toolgatetype.CallerApproval{ManifestDigest: digest})
			require.Nil(t, out.Refusal)
			require.NotNil(t, out.Result)
			assert.Equal(t, decidedOnce, d.take(), "the MCP call")
			mcp := store.take()
			t.Logf("store calls: HTTP quote %v + call %v = %d; MCP %v = %d", quoted, called, http, mcp, sum(mcp))
			assert.LessOrEqual(t, sum(mcp), http, "the MCP call costs the store more than the HTTP quote and call")
			// The quote's reads and write, the key's record (read with
			// them), the admission and the result: no quote read back and
			// no second read of the spend controls.
			want := maps.Clone(quoted)
			want["GetIdempotency"], want["BeginExecution"], want["FinishExecution"] = 1, 1, 1
			assert.Equal(t, want, mcp)
		})
	}
}

func sum(calls map[string]int) int {
	n := 0
	for _, c := range calls {
		n += c
	}
	return n
}

// The reads a call through CallTool may make besides a call's own.

func (s *countingStore) GetExecution(ctx context.Context, id uuid.UUID) (storage.Execution, error) {
	s.count("GetExecution")
	return s.Store.GetExecution(ctx, id)
}

func (s *countingStore) GetApprovalRequest(ctx context.Context, id uuid.UUID) (storage.ApprovalRequest, error) {
	s.count("GetApprovalRequest")
	return s.Store.GetApprovalRequest(ctx, id)
}

func (s *countingStore) ListApprovalRequests(ctx context.Context, f storage.ApprovalRequestFilter) ([]storage.ApprovalRequest, error) {
	s.count("ListApprovalRequests")
	return s.Store.ListApprovalRequests(ctx, f)
}

// TestCallToolDecidesOnceAcrossAQuestion pins that a tools/call that asks
// for approval decides once, and so does the call that follows the
// answer, in either approval mode: the caller's answer runs under the
// quote it was asked under, and an approver's grant under the quote its
// request was made for.
func TestCallToolDecidesOnceAcrossAQuestion(t *testing.T) {
	t.Parallel()
	for _, mode := range []toolgatetype.ApprovalMode{toolgatetype.ApprovalModeCaller, toolgatetype.ApprovalModeApprover} {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			d := &decisions{n: map[string]int{}, mode: mode}
			store := &countingStore{Store: memory.New(), calls: map[string]int{}}
			e := newEnvWithStore(t, store, []toolSpec{callable}, func(c *toolgate.Config) {
				c.Approvers, c.SpendControls, c.Approvals = d, d, d
				c.Budgets = []toolgatetype.BudgetDefinition{{ID: "team", Members: []string{"alice"}, DailyLimitUSD: dec("100")}}
			})
			ctx := claimsContext{context.Background(), d}
			p, err := e.gw.Prepare("alice", "echo", json.RawMessage(`{"v":"hi"}`))
			require.NoError(t, err)

			asked := requireWaits(t, e.gw.CallPreparedTool(ctx, p, "k1", nil))
			assert.Equal(t, decidedOnce, d.take(), "the call that asks")
			var answer *toolgatetype.CallerApproval
			if mode == toolgatetype.ApprovalModeApprover {
				_, err := e.gw.DecideApproval(ctx, "pat", asked.Request.ID, toolgatetype.Decision{Approve: true})
				require.NoError(t, err)
				d.take()
			} else {
				answer = &toolgatetype.CallerApproval{QuoteID: asked.QuoteID, ManifestDigest: asked.ManifestDigest}
			}
			store.take()
			out := e.gw.CallPreparedTool(ctx, p, "k1", answer)
			require.Nil(t, out.Refusal)
			require.NotNil(t, out.Result)
			assert.Equal(t, decidedOnce, d.take(), "the call that follows the answer")
			calls := store.take()
			t.Logf("store calls of the call that follows the answer: %v = %d", calls, sum(calls))
			assert.Zero(t, calls["CreateQuote"], "the call that follows the answer makes a quote it does not use")
		})
	}
}
