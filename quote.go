package toolgate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/toolgate/toolgate/internal/executor"
	"github.com/toolgate/toolgate/internal/pricing"
	"github.com/toolgate/toolgate/internal/ruling"
	"github.com/toolgate/toolgate/internal/spendlimits"
	"github.com/toolgate/toolgate/internal/toolrun"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// Quote prices a call of the tool (by slug or id) for principal and returns
// the policy and spend-control decisions. A quote is issued even when the
// tool is blocked or the controls deny, so the caller can read why; it stays
// usable for one call until it expires.
func (g *Gateway) Quote(ctx context.Context, principal, tool string) (*toolgatetype.QuoteResult, error) {
	return g.QuoteWith(ctx, principal, tool, toolgatetype.QuoteOptions{})
}

// QuoteWith is Quote with options: an input, to have the organization's
// rules that read it decided in the quote rather than shown pending.
func (g *Gateway) QuoteWith(ctx context.Context, principal, tool string, opts toolgatetype.QuoteOptions) (*toolgatetype.QuoteResult, error) {
	rec := g.obs.StartQuote(tool)
	res, err := g.quote(ctx, principal, tool, opts)
	g.obs.EndQuote(ctx, rec, res, err)
	return res, err
}

// quoteVersion is Quote of the tool's version v, already looked up, for a
// call under key by a caller whose approval mode is mode, whose rules
// decided r: when the key
// holds a record already, that is returned instead (quoted.prior), and no
// quote is made.
func (g *Gateway) quoteVersion(ctx context.Context, principal string, v *registry.Version, key string, mode toolgatetype.ApprovalMode, r *ruling.Decided) (*quoted, error) {
	rec := g.obs.StartQuote(v.Tool.Slug)
	rec.Tool = v
	if err := toolrun.IdentityMissing(ctx, v); err != nil {
		g.obs.EndQuote(ctx, rec, nil, err)
		return &quoted{}, err
	}
	qd, err := g.quoteOf(ctx, principal, v, key, mode, quoteRules{decided: true, ruled: r})
	if qd.prior == nil { // else nothing was quoted
		g.obs.EndQuote(ctx, rec, qd.res, err)
	}
	return &qd, err
}

// quote is Quote without its reporting.
func (g *Gateway) quote(ctx context.Context, principal, tool string, opts toolgatetype.QuoteOptions) (*toolgatetype.QuoteResult, error) {
	if err := validPrincipal(principal); err != nil {
		return nil, err
	}
	v, _, err := g.lookupFor(ctx, principal, tool)
	if err != nil {
		return nil, err
	}
	if err := toolrun.IdentityMissing(ctx, v); err != nil {
		return nil, err
	}
	var in quoteRules
	if opts.Input != nil {
		if in.input, err = canonicalInput(opts.Input); err != nil {
			return nil, err
		}
	}
	mode, err := g.approvalMode(ctx, principal)
	if err != nil {
		return nil, err
	}
	qd, err := g.quoteOf(ctx, principal, v, "", mode, in)
	return qd.res, err
}

// quoteRules is how a quote shows the organization's rules: as a call
// deciding them decided (the call's door quotes for it), else decided on
// input, the canonical input its caller gave, or with the input unknown
// when nil.
type quoteRules struct {
	decided bool
	ruled   *ruling.Decided
	input   []byte
}

// quoteOf quotes a call of v for principal, whose approval mode is mode,
// unless key ("": none) holds a record already, which it then returns; with
// the quote, what it decided (see quoted).
func (g *Gateway) quoteOf(ctx context.Context, principal string, v *registry.Version, key string, mode toolgatetype.ApprovalMode, in quoteRules) (quoted, error) {
	now := g.clock.Now().UTC()
	amt := pricing.WithFee(v.Tool.Pricing.Amount, g.feeRate)
	approval, err := g.externalApproval(ctx, principal, v)
	if err != nil {
		return quoted{}, internalError(err)
	}
	q := storage.Quote{
		ID:             uuid.New(),
		Principal:      principal,
		ToolID:         v.Tool.ID,
		ToolSlug:       v.Tool.Slug,
		ToolVersion:    v.Tool.Version,
		ManifestDigest: v.Digest,
		PriceUSD:       amt.Price,
		FeeUSD:         amt.Fee,
		TotalUSD:       amt.Total,
		CreatedAt:      now,
		ExpiresAt:      now.Add(g.cfg.QuoteTTL),
		State:          storage.QuoteOpen,
	}
	// The caller's budgets' windows are measured with the caller's own.
	windows := spendlimits.Windows(v.Tool.ID, now)
	nodes := g.callBudgets(ctx, principal)
	var budgetLimits []spendlimits.Built
	if nodes != nil {
		budgetLimits = spendlimits.AppendBudgetLimits(nil, nodes, v.Tool, now, false)
		for _, b := range budgetLimits {
			windows = append(windows, b.Limit)
		}
	}
	// The quote is stored whatever the decisions, so it is stored in the
	// same step as the reads they need: one round trip on a database.
	read, err := g.store.ReadBatch(ctx, storage.Reads{
		Principal:     principal,
		Approval:      g.approvalsFromStore,
		ToolID:        v.Tool.ID,
		SpendControls: true,
		Limits:        windows,
		CreateQuote:   &q,
		MaxOpenQuotes: g.cfg.MaxOpenQuotes,
		Key:           key,
	})
	var open *storage.OpenQuotesError
	switch {
	case errors.Is(err, storage.ErrIdempotencyConflict):
		// A call under the key began between the store's read and the quote.
		return quoted{}, executor.KeyInUse()
	case errors.As(err, &open):
		return quoted{}, tooManyOpenQuotes(open, now)
	case err != nil:
		return quoted{}, internalError(err)
	case read.Prior != nil:
		return quoted{prior: read.Prior}, nil
	}
	if g.approvalsFromStore {
		approval = read.Approval
	}
	limits, err := g.limitsFor(ctx, principal, v.Tool.Slug, read.SpendControls)
	if err != nil {
		return quoted{}, err
	}
	r := in.ruled
	if !in.decided {
		r = g.decideRules(ctx, principal, v, nodes, mode, in.input, false)
	}
	policy := ruling.Apply(forCaller(EvaluatePolicy(v), standingFor(approval, mode), amt.Total.IsZero()), r)
	controls := spendlimits.PreviewControls(limits, read.Used, amt.Total)
	var short *toolgatetype.BudgetRefusal
	if nodes != nil {
		short = spendlimits.PreviewBudgets(&controls, nodes, v.Tool.Slug, budgetLimits, read.Used[len(windows)-len(budgetLimits):], amt.Total)
	}
	res := &toolgatetype.QuoteResult{
		Quote: toolgatetype.QuoteInfo{
			ID:             q.ID.String(),
			PriceUSD:       toolgatetype.FormatUSD(q.PriceUSD),
			FeeUSD:         toolgatetype.FormatUSD(q.FeeUSD),
			TotalUSD:       toolgatetype.FormatUSD(q.TotalUSD),
			ExpiresAt:      q.ExpiresAt,
			ManifestDigest: policy.Approval.ManifestDigest,
		},
		Tool:     toolrun.Ref(v.Tool),
		Policy:   policy,
		Controls: controls,
	}
	return quoted{res: res, short: short, budgets: nodes, ruled: r, adm: admission{quote: q, policy: policy, mode: mode, limits: limits}}, nil
}

// tooManyOpenQuotes is the rate_limited answer to a quote the store
// refused for the caller's open quotes: it names the cap and says when the
// first of them expires, which is when a quote succeeds again unless the
// caller uses one first. A quote stays open until strictly before its
// expiry, so the wait is rounded up to the whole second.
func tooManyOpenQuotes(e *storage.OpenQuotesError, now time.Time) *toolgatetype.Error {
	wait := e.FirstExpiry.Sub(now)
	if rounded := wait.Truncate(time.Second); rounded < wait {
		wait = rounded + time.Second
	}
	wait = max(wait, time.Second)
	return &toolgatetype.Error{
		Code: toolgatetype.CodeRateLimited,
		Message: fmt.Sprintf("%d open quotes, the most a caller may hold; the first of them expires at %s: use one, or retry in %d seconds",
			e.Max, e.FirstExpiry.UTC().Format(time.RFC3339), int(wait/time.Second)),
		RetryAfter: wait,
	}
}

// externalApproval reads the caller's standing approval of the tool when
// approvals come from somewhere other than the store (Config.Approvals);
// nil when none is given, or when they come from the store, which is read
// with everything else.
func (g *Gateway) externalApproval(ctx context.Context, principal string, v *registry.Version) (*storage.Approval, error) {
	if g.approvalsFromStore {
		return nil, nil
	}
	a, err := g.approvals.GetApproval(ctx, principal, v.Tool.ID)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, err
	}
	return &a, nil
}

// checkQuote applies the quote rules of a call to found, the quote read for
// it (nil: none): the quote exists for this caller, is for this tool, is
// open (or already used by this very key, when a retry takes over an
// abandoned run), has not expired and was issued for the tool version now
// current. It returns the quote even when a rule fails, for a resumed run
// to decide what still matters. key is the Idempotency-Key of the call
// made under it ("": none yet).
func (g *Gateway) checkQuote(p *PreparedCall, quoteID uuid.UUID, key string, found *storage.Quote, now time.Time) (storage.Quote, error) {
	if found == nil || found.Principal != p.principal {
		// Another caller's quote is reported as absent, so ids cannot be probed.
		return storage.Quote{}, newError(toolgatetype.CodeQuoteNotFound, "no quote %s exists for this caller", quoteID)
	}
	q, v := *found, p.tool
	switch {
	case q.ToolID != v.Tool.ID:
		return q, newError(toolgatetype.CodeQuoteToolMismatch, "quote %s was issued for %s, not %s", q.ID, q.ToolSlug, v.Tool.Slug)
	case q.State == storage.QuoteUsed && q.UsedByKey != key:
		return q, newError(toolgatetype.CodeQuoteUsed, "quote %s was already used by another call; request a new quote", q.ID)
	case !now.Before(q.ExpiresAt):
		return q, newError(toolgatetype.CodeQuoteExpired, "quote %s expired at %s; request a new quote", q.ID, q.ExpiresAt.Format(time.RFC3339))
	case q.ManifestDigest != v.Digest || q.ToolVersion != v.Tool.Version:
		return q, newError(toolgatetype.CodeQuoteOutdated, "the tool changed since quote %s was issued; request a new quote", q.ID)
	}
	return q, nil
}
