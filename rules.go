package toolgate

import (
	"context"
	"fmt"

	"github.com/toolgate/toolgate/internal/budgets"
	"github.com/toolgate/toolgate/internal/pricing"
	"github.com/toolgate/toolgate/internal/ruling"
	"github.com/toolgate/toolgate/internal/telemetry"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/rules"
	"github.com/toolgate/toolgate/toolgatetype"
)

// SetRules compiles rs and puts them in force for the calls, quotes and
// listings that begin from then on; on an error (a *rules.Error) those in
// force stay. A server reloading its config calls it.
func (g *Gateway) SetRules(rs []rules.Rule) error {
	set, err := rules.Compile(rs)
	if err != nil {
		return fmt.Errorf("toolgate: %w", err)
	}
	g.rules.Store(set)
	return nil
}

// The organization's rules are decided once per call, at its admission
// (Call's decide, CallTool before it quotes, RequestApproval), on the
// real input; a quote decides them for show, the input unknown unless its
// caller gives it. A hide rule is decided wherever the tool is looked up
// for a caller, so that a hidden tool is absent everywhere.

// decideRules decides the deny and ask rules of principal's call of v,
// whose caller counts in nodes and approves in mode, at v's cost (its
// price and the gateway's fee). input is the call's canonical input, nil
// for a quote that has none (then rules that read it are pending). count says the decision is the call's (its
// matches counted and failures logged), not a quote's view of it. Nil when
// no rule matched, which is the common case and costs no allocation.
func (g *Gateway) decideRules(ctx context.Context, principal string, v *registry.Version, nodes []*budgets.Node, mode toolgatetype.ApprovalMode, input []byte, count bool) *ruling.Decided {
	set := g.rules.Load()
	if set.Len() == 0 {
		return nil
	}
	risk := RiskOf(v.Capabilities)
	set, cost := g.ruleTools.Narrow(set, v, risk, g.ruleCost(v))
	if set.Len() == 0 {
		return nil
	}
	s := &rules.Subject{
		Principal:  ruling.Principal(principal, rules.ClaimsFrom(ctx), ruling.BudgetIDs(nodes), mode),
		Tool:       g.ruleTools.Of(v, risk),
		Cost:       cost,
		Now:        g.clock.Now(),
		InputKnown: input != nil,
	}
	if s.InputKnown && set.ReadsInput() {
		s.Input = g.ruleTools.Input(v, input)
	}
	d := set.DecideWith(s, g.ruleStatics.Of(set, s, mode))
	if len(d.Matches) == 0 {
		return nil
	}
	if count {
		g.ruleObs.Saw(ctx, d.Matches)
		rules.TrailFrom(ctx).Add(d.Matches)
	}
	return ruling.Of(d)
}

// hidden reports whether a hide rule hides v from principal, and the hide
// rules that matched (audit ones included). count says the lookup is a
// call's, whose matches are counted, not a listing's.
func (g *Gateway) hidden(ctx context.Context, principal string, v *registry.Version, count bool) (bool, []rules.Match) {
	set := g.rules.Load()
	if !set.Hides() {
		return false, nil
	}
	risk := RiskOf(v.Capabilities)
	if set, _ = g.ruleTools.Narrow(set, v, risk, g.ruleCost(v)); !set.Hides() {
		return false, nil
	}
	mode, err := g.approvalMode(ctx, principal)
	if err != nil {
		// Hidden rather than shown: the rule could not be decided.
		return true, nil
	}
	p := ruling.Principal(principal, rules.ClaimsFrom(ctx), ruling.BudgetIDs(g.callBudgets(ctx, principal)), mode)
	hide, ms := set.Hidden(p, g.ruleTools.Of(v, risk))
	if count {
		g.ruleObs.Saw(ctx, ms)
		rules.TrailFrom(ctx).Add(ms)
	}
	return hide, ms
}

// lookupFor is lookup for a caller: a tool a rule hides from principal is
// not found, in the very words of one that does not exist. ms are the
// hide rules that matched in audit mode.
func (g *Gateway) lookupFor(ctx context.Context, principal, slugOrID string) (*registry.Version, []rules.Match, error) {
	v, err := g.lookup(slugOrID)
	if err != nil {
		return nil, nil, err
	}
	hide, ms := g.hidden(ctx, principal, v, true)
	if hide {
		return nil, nil, errToolNotFound(slugOrID)
	}
	return v, ms, nil
}

// ruleCost computes what a call of v costs, as rules read it: its price
// and the gateway's fee, the same for every call of the version (a quote
// of another version is refused before rules decide a call under it).
func (g *Gateway) ruleCost(v *registry.Version) func() rules.Cost {
	return func() rules.Cost {
		amt := pricing.WithFee(v.Tool.Pricing.Amount, g.feeRate)
		return rules.Cost{PriceUSD: amt.Price.InexactFloat64(), FeeUSD: amt.Fee.InexactFloat64(), TotalUSD: amt.Total.InexactFloat64()}
	}
}

// ruleCall decides p's rules, once: the first door to decide them for
// the call does, on its real input, and the others use that.
func (g *Gateway) ruleCall(ctx context.Context, p *PreparedCall, nodes []*budgets.Node, mode toolgatetype.ApprovalMode) {
	if p.ruledDone {
		return
	}
	p.ruled = g.decideRules(ctx, p.principal, p.tool, nodes, mode, p.input, true).WithHidden(p.hideMatches)
	p.ruledDone = true
}

// ruleToolCall decides the rules of a call CallTool makes, before it
// quotes: the mode the call is approved in (approver, when a rule asks),
// or its refusal, reported as Call reports one.
func (g *Gateway) ruleToolCall(ctx context.Context, c *call, mode toolgatetype.ApprovalMode) (toolgatetype.ApprovalMode, error) {
	if g.rules.Load().Len() == 0 {
		return mode, nil
	}
	hide, ms := g.hidden(ctx, c.principal, c.tool, true)
	if hide {
		_, err := g.refusedBeforeRun(ctx, c.principal, c.tool.Tool.Slug, nil, errToolNotFound(c.tool.Tool.Slug))
		return mode, err
	}
	c.hideMatches = ms
	g.ruleCall(ctx, &c.PreparedCall, g.callBudgets(ctx, c.principal), mode)
	if err := c.ruled.Refusal(); err != nil {
		var rec telemetry.CallRecord
		ctx = g.obs.StartCall(ctx, &rec, c.principal, c.tool.Tool.Slug)
		rec.SetTool(c.tool)
		rec.SetRules(ruling.Uses(c.ruled.All()))
		g.obs.EndCall(ctx, &rec, nil, err)
		return mode, err
	}
	if c.ruled.Asks() {
		mode = toolgatetype.ApprovalModeApprover
	}
	return mode, nil
}
