package toolgate

import (
	"context"
	"errors"
	"time"

	"github.com/toolgate/toolgate/internal/events"
	"github.com/toolgate/toolgate/internal/executor"
	"github.com/toolgate/toolgate/internal/receipting"
	"github.com/toolgate/toolgate/internal/ruling"
	"github.com/toolgate/toolgate/internal/spendlimits"
	"github.com/toolgate/toolgate/internal/tokenexchange"
	"github.com/toolgate/toolgate/internal/toolrun"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// newExecutor is the gateway's executor of calls.
func (g *Gateway) newExecutor() *executor.Executor {
	return &executor.Executor{
		Store:  g.store,
		Now:    g.clock.Now,
		Lease:  g.cfg.IdempotencyLease,
		Detach: toolrun.Detach,
	}
}

// unit is c as the executor runs it: how it is admitted (the gateway's
// checks), what it runs (the provider, the receipt), and its hooks: the
// call's metric, span and log line, and what the gateway does on a
// refusal and after a run.
func (g *Gateway) unit(c *call) *executor.Call {
	c.g = g
	c.hooks = [2]executor.Hooks{g.obs.CallHooks(&c.rec), {Refused: c.Refused, Ran: c.Ran}}
	c.unit = executor.Call{
		Key:   executor.Key{Principal: c.principal, Key: c.req.IdempotencyKey, Fingerprint: c.fingerprint},
		Admit: executor.Admit{Reads: c.Reads, Decide: c.Decide, Resume: c.Resume, Explain: c.Explain},
		Run:   executor.Run{Tool: c.tool, Input: c.input, Do: c.Run},
		Hooks: c.hooks[:],
	}
	return &c.unit
}

// Reads is the call's executor.Admit.Reads: the reads of admitReads,
// after the token its provider is to be sent on the caller's behalf, got
// before anything is admitted so that a refused exchange stores nothing
// (and a retry of a finished call is still answered from its key).
func (c *call) Reads(ctx context.Context) (storage.Reads, error) {
	if c.upstreamToken, c.identityErr = c.g.runner.UpstreamToken(ctx, c.tool, c.principal); c.identityErr != nil {
		return storage.Reads{}, c.identityErr
	}
	return c.g.admitReads(ctx, c)
}

// Decide is the call's executor.Admit.Decide: the checks of decide. Its
// refusal is the caller's; Refused tells its events.
func (c *call) Decide(ctx context.Context, read storage.ReadResult, now time.Time) (storage.Begin, error) {
	var err error
	if c.adm, err = c.g.decide(ctx, c, read, c.mode, now); err != nil {
		return storage.Begin{}, err
	}
	return c.begin(now), nil
}

// Resume is the call's executor.Admit.Resume: the checks of admitResumed.
func (c *call) Resume(ctx context.Context, now time.Time) (storage.Begin, error) {
	if c.identityErr != nil {
		// Without the token its provider needs, it cannot take a run over.
		return storage.Begin{}, c.identityErr
	}
	adm, err := c.g.admitResumed(ctx, c, now)
	if err != nil {
		return storage.Begin{}, err
	}
	c.adm = adm
	return c.begin(now), nil
}

// refusedBy writes the events of a refusal by a budget (budgetRefused).
func (g *Gateway) refusedBy(ctx context.Context, err error, now time.Time) {
	var te *toolgatetype.Error
	if g.events != nil && errors.As(err, &te) && te.Budget != nil {
		g.budgetRefused(ctx, te.Budget, now)
	}
}

// begin is what the store is to admit for the call as admitted: the rate
// and spend windows counted with what is in flight, the amount reserved,
// the quote used and the key claimed.
func (c *call) begin(now time.Time) storage.Begin {
	adm := &c.adm
	c.limits = adm.limits.Build(c.tool.Tool.ID, now)
	if c.budgets != nil {
		c.limits = spendlimits.AppendBudgetLimits(c.limits, c.budgets, c.tool.Tool, now, true)
	}
	return storage.Begin{
		QuoteID:   adm.quote.ID,
		ToolID:    c.tool.Tool.ID,
		AmountUSD: adm.quote.TotalUSD,
		Limits:    spendlimits.StoreLimits(c.limits),
		Budgets:   spendlimits.BudgetDays(c.budgets, now),
		GrantID:   c.grant,

		ToolSlug:       c.tool.Tool.Slug,
		ManifestDigest: adm.quote.ManifestDigest,
		PriceUSD:       adm.quote.PriceUSD,
		FeeUSD:         adm.quote.FeeUSD,
		Approval:       c.approvalKind(),
		Rules:          ruling.StoreUses(c.ruled.All()),
	}
}

// Explain is the call's executor.Admit.Explain: a refusal of Decide's is
// the caller's already; the store's is explained (see refusedByStore).
func (c *call) Explain(err error, now time.Time) error {
	if _, decided := err.(*toolgatetype.Error); !decided {
		err = refusedByStore(err, c.limits, c.adm.quote.TotalUSD, now)
	}
	return err
}

// Refused is the gateway's executor.Hooks.Refused: the events of a
// refusal by a budget.
func (c *call) Refused(_ context.Context, u *executor.Call, err error) {
	c.g.refusedBy(context.Background(), err, u.Now)
}

// Run is the call's executor.Run.Do: it calls the provider, unless a run that
// took this call over cannot tell whether the provider ran it, and seals
// the receipt the store keeps in the step that records the result.
func (c *call) Run(ctx context.Context, cl executor.Claim) (executor.Record, error) {
	g := c.g
	if cl.TookOver && !c.tool.RetrySafe() {
		// The run that began this call died before it finished, perhaps
		// after its request left: sending it again could run it twice.
		c.exec = toolrun.Ambiguous(toolrun.NewExecution(c.tool, c.adm.quote, cl.Execution.ID), c.tool, "the gateway's run of it stopped before it finished")
	} else {
		ctx := tokenexchange.WithUpstreamToken(ctx, c.upstreamToken)
		c.exec, c.upstreamStatus = g.runner.Call(ctx, c.tool, c.adm.quote, cl.Execution.ID, c.input, c.adm.abandon)
	}
	c.exec.Rules = ruling.Uses(c.ruled.All())
	body, err := toolrun.Encode(c.exec)
	if err != nil {
		return executor.Record{}, internalError(err)
	}
	finished := g.clock.Now().UTC()
	// The caller's answer, whose Body is the response as stored and whose
	// receipt is the one sealed when it is.
	res := &toolgatetype.CallResult{Execution: c.exec}
	res.Execution.Receipt = &c.sealed
	r := executor.Record{
		Result:         res,
		Status:         c.exec.Status,
		Response:       body,
		Finished:       finished,
		Seal:           g.receipts.Signer.Seal(receipting.Of(c.principal, c.tool, c.input, c.adm.grant, cl, &c.exec, finished), &c.sealed),
		UpstreamStatus: c.upstreamStatus,
	}
	if c.exec.Error != nil {
		r.ErrorCode = c.exec.Error.Code
	}
	switch {
	case g.events == nil:
	case c.exec.Status == toolgatetype.StatusAmbiguous:
		e := cl.Execution
		e.Status, e.FinishedAt = c.exec.Status, finished
		ev, err := events.Ambiguous(g.summarize(e), finished)
		if err != nil {
			return executor.Record{}, internalError(err)
		}
		r.Events = []storage.NewEvent{ev}
	case c.exec.Status == toolgatetype.StatusCompleted:
		// The budgets the execution was admitted in, which for a takeover
		// are those of the run that began it.
		r.Alerts = g.budgetAlerts(cl.Execution.Budgets, finished)
	}
	return r, nil
}

// Ran is the gateway's executor.Hooks.Ran: what follows a recorded run.
func (c *call) Ran(ctx context.Context, _ *executor.Call, cl executor.Claim, r *executor.Record) {
	g, adm, exec := c.g, &c.adm, c.exec
	if exec.Status == toolgatetype.StatusAmbiguous {
		e := cl.Execution
		e.Status, e.FinishedAt = exec.Status, r.Finished
		g.notifyAmbiguous(ctx, g.summarize(e))
	}
	if exec.Status == toolgatetype.StatusCompleted && !adm.resumed && !cl.TookOver && adm.policy.Approval.Requirement == toolgatetype.RequirementFirstUse &&
		adm.mode == toolgatetype.ApprovalModeCaller && c.req.ApprovalDigest != "" {
		// In caller mode the caller's own approval of the digest covers
		// its later calls (section 6). An approver's grant is not such an
		// approval: it approved this call only, unless the approver chose
		// to remember, which DecideApproval recorded already.
		g.rememberFirstUse(ctx, c.principal, c.tool)
	}
	if len(r.Events) > 0 || len(r.Alerts) > 0 {
		g.events.Wake()
	}
}
