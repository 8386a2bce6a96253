package toolgate

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/storage"
)

// CallRequest is one call of a tool under a quote.
type CallRequest struct {
	// Tool is the tool's slug or id.
	Tool string
	// QuoteID is the id of an open quote of this caller for this tool.
	QuoteID string
	// Input is the tool's input object.
	Input json.RawMessage
	// ApprovalDigest is the manifest digest the user approved; empty when
	// the caller sends no approval.
	ApprovalDigest string
	// IdempotencyKey identifies the logical call; retries reuse it.
	IdempotencyKey string
}

// CallResult is the outcome of a call.
type CallResult struct {
	Execution Execution
	// Body is the execution result exactly as stored: a replay returns the
	// same bytes as the original call.
	Body []byte
	// Replayed is true when the result is a stored one returned for a retry.
	Replayed bool
}

// Execution is the normalized result of one call.
type Execution struct {
	ID     string          `json:"id"`
	Tool   ToolRef         `json:"tool"`
	Status string          `json:"status"`
	Cost   Cost            `json:"cost"`
	Output json.RawMessage `json:"output"`
	Error  *ExecutionError `json:"error"`
}

// Cost is what a call costs. A failed execution shows the quoted amounts
// but is not charged.
type Cost struct {
	PriceUSD string `json:"priceUsd"`
	FeeUSD   string `json:"feeUsd"`
	TotalUSD string `json:"totalUsd"`
	Currency string `json:"currency"`
}

// ExecutionError says why an execution failed. Its message is the
// gateway's, never the provider's unfiltered text.
type ExecutionError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// CodeToolChangedDuringCall is the error code of a call retried after its
// first run was abandoned, when the tool changed or was blocked meanwhile.
const CodeToolChangedDuringCall = "tool_changed"

// Execution statuses as callers see them.
const (
	StatusCompleted = "completed"
	StatusFailed    = "failed"
)

// Call runs one call: it checks the request, the quote, the policy, the
// input and the caller's limits, reserves the amount, calls the provider,
// normalizes and validates the output, and records the result, charging only
// a completed execution. Every rejection is an *Error and leaves nothing
// stored, so the same Idempotency-Key can be used again once the request is
// corrected. A retry with the same key and request returns the stored result
// (Replayed), without calling the provider again.
func (g *Gateway) Call(ctx context.Context, principal string, req CallRequest) (*CallResult, error) {
	if err := validPrincipal(principal); err != nil {
		return nil, err
	}
	if err := ValidateIdempotencyKey(req.IdempotencyKey); err != nil {
		return nil, err
	}
	v, err := g.lookup(req.Tool)
	if err != nil {
		return nil, err
	}
	quoteID, err := uuid.Parse(req.QuoteID)
	if err != nil {
		return nil, newError(CodeInvalidRequest, "quoteId must be the id of a quote (a UUID)")
	}
	if len(bytes.TrimSpace(req.Input)) == 0 {
		return nil, newError(CodeInvalidRequest, "input is required")
	}
	input, err := registry.Canonicalize(req.Input)
	if err != nil {
		return nil, newError(CodeInvalidRequest, "input is not valid JSON: %v", strings.TrimPrefix(err.Error(), registry.ErrNotCanonicalizable.Error()+": "))
	}
	fp := fingerprintOf(v.Tool.ID, quoteID.String(), input, req.ApprovalDigest)

	now := g.clock.Now().UTC()
	// Most calls are new, so the key's record is not read up front: a key
	// already claimed makes BeginExecution fail, and a call refused before
	// its key is claimed reads the record then. Either way a retry is
	// answered as it was when the record was read first (replayed, 409, 422
	// or taken over), and a new call saves a store round trip.
	adm, err := g.admitCall(ctx, principal, req, v, quoteID, input, now, false)
	var (
		begun     storage.BeginResult
		built     []builtLimit
		lease     uuid.UUID
		fromBegin bool // err is the store's refusal, still to be explained
	)
	if err == nil {
		begun, built, lease, err = g.begin(ctx, principal, req.IdempotencyKey, fp, v, adm, now)
		if errors.Is(err, storage.ErrIdempotencyConflict) {
			return g.beginFailed(ctx, principal, req.IdempotencyKey, fp, built, err, now)
		}
		fromBegin = true // a store may check the quote or the limits before the key
	}
	if err != nil {
		rec, rerr := g.store.GetIdempotency(ctx, principal, req.IdempotencyKey)
		switch {
		case errors.Is(rerr, storage.ErrNotFound) && fromBegin:
			return g.beginFailed(ctx, principal, req.IdempotencyKey, fp, built, err, now)
		case errors.Is(rerr, storage.ErrNotFound):
			return nil, err
		case rerr != nil:
			return nil, internalError(rerr)
		}
		if res, err := g.existingRecord(rec, fp, now); res != nil || err != nil {
			return res, err
		}
		// An abandoned run of this very request, which this call takes over.
		if adm, err = g.admitCall(ctx, principal, req, v, quoteID, input, now, true); err != nil {
			return nil, err
		}
		if begun, built, lease, err = g.begin(ctx, principal, req.IdempotencyKey, fp, v, adm, now); err != nil {
			return g.beginFailed(ctx, principal, req.IdempotencyKey, fp, built, err, now)
		}
	}
	q := adm.quote
	takeover := adm.takeover || begun.TookOver
	if begun.TookOver {
		g.log.InfoContext(ctx, "took over an abandoned call", "execution", begun.Execution.ID, "tool", v.Tool.Slug)
	}

	// Once admitted, a call runs to its end even if the caller goes away:
	// the upstream deadline still bounds it, and a retry with the same key
	// then gets the real outcome, not a failure the caller caused by
	// disconnecting. The result is recorded in any case, so a call that
	// reached the provider is never left half-written.
	finishCtx := context.WithoutCancel(ctx)
	exec := g.execute(finishCtx, v, q, begun.Execution.ID, input, adm.abandon)
	body, err := encodeExecution(exec)
	if err != nil {
		return nil, internalError(err)
	}
	err = g.store.FinishExecution(finishCtx, storage.Finish{
		Principal:   principal,
		Key:         req.IdempotencyKey,
		ExecutionID: begun.Execution.ID,
		LeaseToken:  lease,
		Status:      storage.ExecutionStatus(exec.Status),
		Charged:     exec.Status == StatusCompleted,
		Response:    body,
		Now:         g.clock.Now().UTC(),
	})
	if errors.Is(err, storage.ErrLeaseLost) {
		// Another run took this call over; its result is the one that counts.
		rec, err := g.store.GetIdempotency(finishCtx, principal, req.IdempotencyKey)
		if err == nil && rec.Finished {
			return replay(rec.Response)
		}
		return nil, newError(CodeIdempotencyKeyInUse, "another request with this Idempotency-Key is in progress; retry later")
	}
	if err != nil {
		return nil, internalError(fmt.Errorf("record execution %s: %w", begun.Execution.ID, err))
	}
	if exec.Status == StatusCompleted && req.ApprovalDigest != "" && !takeover &&
		adm.policy.Approval.Requirement == RequirementFirstUse {
		g.rememberFirstUse(finishCtx, principal, v)
	}
	return &CallResult{Execution: exec, Body: body}, nil
}

// fingerprintOf returns what fingerprint returns, as it must, or retries
// would stop matching their first run. fingerprint encodes its document and
// canonicalizes it again, decoding the input a second time; when the ids and
// the digest are plain printable ASCII, which is their canonical form as it
// is, the canonical document is written directly around the input, already
// canonical, with its members in their canonical order.
func fingerprintOf(toolID, quoteID string, canonicalInput []byte, approvalDigest string) string {
	if !plainASCII(toolID) || !plainASCII(quoteID) || !plainASCII(approvalDigest) {
		return fingerprint(toolID, quoteID, canonicalInput, approvalDigest)
	}
	doc := make([]byte, 0, 64+len(toolID)+len(quoteID)+len(canonicalInput)+len(approvalDigest))
	doc = append(doc, `{"approval":"`...)
	doc = append(doc, approvalDigest...)
	doc = append(doc, `","input":`...)
	doc = append(doc, canonicalInput...)
	doc = append(doc, `,"quoteId":"`...)
	doc = append(doc, quoteID...)
	doc = append(doc, `","tool":"`...)
	doc = append(doc, toolID...)
	doc = append(doc, `"}`...)
	sum := sha256.Sum256(doc)
	return hex.EncodeToString(sum[:])
}

// plainASCII reports whether s is printable ASCII without a quote or a
// backslash: a string RFC 8785 writes exactly as it is.
func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// encodeExecution is json.Marshal(exec) without encoding/json going over a
// completed execution's output a second time (json.RawMessage is re-checked
// and re-compacted byte by byte). That output comes from json.Marshal, so it
// is already exactly what Marshal would write, and is spliced in as it is.
func encodeExecution(exec Execution) ([]byte, error) {
	if exec.Status != StatusCompleted {
		return json.Marshal(exec)
	}
	out := exec.Output
	exec.Output = nil // written as null
	head, err := json.Marshal(exec)
	if err != nil {
		return nil, err
	}
	// The marker cannot occur inside a string, where every quote is escaped.
	const marker, null = `,"output":null,"error":`, `null`
	i := bytes.Index(head, []byte(marker))
	if i < 0 {
		exec.Output = out
		return json.Marshal(exec)
	}
	cut := i + len(marker) - len(`,"error":`) - len(null)
	body := make([]byte, 0, len(head)+len(out))
	body = append(body, head[:cut]...)
	body = append(body, out...)
	return append(body, head[cut+len(null):]...), nil
}

// begin claims the key, uses the quote and reserves the amount of an
// admitted call, in the store's one atomic step.
func (g *Gateway) begin(ctx context.Context, principal, key, fp string, v *registry.Version, adm admission, now time.Time) (storage.BeginResult, []builtLimit, uuid.UUID, error) {
	built := adm.limits.storageLimits(v.Tool.ID, now)
	limits := make([]storage.Limit, len(built))
	for i, b := range built {
		limits[i] = b.limit
	}
	lease := uuid.New()
	begun, err := g.store.BeginExecution(ctx, storage.Begin{
		Principal:   principal,
		Key:         key,
		Fingerprint: fp,
		QuoteID:     adm.quote.ID,
		ExecutionID: uuid.New(),
		ToolID:      v.Tool.ID,
		AmountUSD:   adm.quote.TotalUSD,
		Limits:      limits,
		LeaseToken:  lease,
		LeaseUntil:  now.Add(g.cfg.IdempotencyLease),
		Now:         now,
	})
	return begun, built, lease, err
}

// admission is what a call was admitted with.
type admission struct {
	quote  storage.Quote
	policy Policy // zero for a takeover
	limits effectiveLimits
	// abandon is why a taken-over run must not reach the provider after
	// all. That run was admitted when its quote was valid; it is finished as
	// failed rather than rejected, so its reservation is released and its
	// key answers from then on.
	abandon  *registry.UpstreamError
	takeover bool
}

// admitCall applies the quote, policy, input and static limit checks of a
// call, or, taking over an abandoned run of it, only those that still
// matter: that run was admitted already.
func (g *Gateway) admitCall(ctx context.Context, principal string, req CallRequest, v *registry.Version, quoteID uuid.UUID, input []byte, now time.Time, takeover bool) (admission, error) {
	a := admission{takeover: takeover}
	// A call reads its quote, the caller's spend controls and, unless the
	// approval it carries settles the policy (see admit), the standing
	// approval, all in one step: one round trip on a database.
	settled := req.ApprovalDigest != "" && req.ApprovalDigest == v.Digest
	read, err := storage.ReadBatch(ctx, g.store, storage.Reads{
		Principal:     principal,
		QuoteID:       quoteID,
		SpendControls: true,
		Approval:      g.approvalsFromStore && !takeover && !settled,
		ToolID:        v.Tool.ID,
	})
	if err != nil {
		return a, internalError(err)
	}
	q, err := g.checkQuote(principal, req.IdempotencyKey, quoteID, read.Quote, v, now)
	a.quote = q
	switch {
	case !takeover && err != nil:
		return a, err
	case !takeover:
		if a.policy, err = g.admit(ctx, principal, v, q, req.ApprovalDigest, read.Approval, input); err != nil {
			return a, err
		}
	case isCode(err, CodeQuoteNotFound):
		return a, err
	case isCode(err, CodeQuoteOutdated) || !EvaluatePolicy(v).Callable:
		a.abandon = registry.Upstreamf(CodeToolChangedDuringCall, "%s changed or was blocked before this call could run; request a new quote", v.Tool.Slug)
	}
	limits, err := g.operatorLimits(ctx, principal, v.Tool.Slug)
	if err != nil {
		return a, internalError(err)
	}
	a.limits = limits.withOwn(read.SpendControls, v.Tool.Slug)
	if !takeover {
		if violations := a.limits.staticViolations(q.TotalUSD); len(violations) > 0 {
			return a, &Error{Code: CodeSpendLimitExceeded, Message: "the call would break your spend controls", Violations: violations}
		}
	}
	return a, nil
}

// existingRecord decides what a call meets when its key was claimed before:
// the stored result, 422 for another request under the same key, 409 while
// the first run holds its lease. (nil, nil) means an abandoned run of the
// same request that this call may take over.
func (g *Gateway) existingRecord(rec storage.IdempotencyRecord, fp string, now time.Time) (*CallResult, error) {
	switch {
	case rec.Fingerprint != fp:
		return nil, newError(CodeIdempotencyKeyReused, "this Idempotency-Key was used for a different request; use a new key for a new call")
	case rec.Finished:
		return replay(rec.Response)
	case now.Before(rec.LeaseUntil):
		return nil, newError(CodeIdempotencyKeyInUse, "a request with this Idempotency-Key is still in progress; retry later")
	}
	return nil, nil
}

func replay(body []byte) (*CallResult, error) {
	var exec Execution
	if err := json.Unmarshal(body, &exec); err != nil {
		return nil, internalError(fmt.Errorf("stored response is unreadable: %w", err))
	}
	return &CallResult{Execution: exec, Body: body, Replayed: true}, nil
}

// admit applies the policy and input checks of a call. stored is the
// caller's standing approval when it was read from the store.
func (g *Gateway) admit(ctx context.Context, principal string, v *registry.Version, q storage.Quote, approval string, stored *storage.Approval, input []byte) (Policy, error) {
	policy := EvaluatePolicy(v)
	switch {
	case approval != "" && approval == v.Digest && g.approvalsFromStore:
		// The caller approved this very digest, which is all any approval
		// requirement asks, and a standing approval changes only the
		// requirement, never whether the tool is callable: it cannot change
		// the outcome, so it was not read. (The one later use of the policy,
		// rememberFirstUse, reads the standing approval itself and leaves it
		// be whenever it would have changed a first_use requirement.)
	case g.approvalsFromStore:
		policy = policy.forCaller(stored, q.TotalUSD.IsZero())
	default:
		external, err := g.externalApproval(ctx, principal, v)
		if err != nil {
			return policy, internalError(err)
		}
		policy = policy.forCaller(external, q.TotalUSD.IsZero())
	}
	explain := func(e *Error) *Error {
		e.ApprovalRequirement = policy.Approval.Requirement
		e.ManifestDigest = policy.Approval.ManifestDigest
		e.Reasons = policy.Reasons
		return e
	}
	if !policy.Callable {
		return policy, explain(newError(CodeToolBlocked, "%s cannot be called: %s", v.Tool.Slug, strings.Join(policy.Reasons, "; ")))
	}
	switch {
	case approval == "" && policy.needsApproval():
		return policy, explain(newError(CodeApprovalRequired, "calling %s requires approval of its manifest digest (%s)", v.Tool.Slug, policy.Approval.Requirement))
	case approval != "" && approval != v.Digest:
		// Even where no approval is needed, one for another digest means the
		// user approved something else.
		return policy, explain(newError(CodeApprovalMismatch, "the approval names another manifest digest than %s's current version", v.Tool.Slug))
	}
	if failures := v.Input.Validate(input, "input"); failures != nil {
		return policy, &Error{Code: CodeInputInvalid, Message: "the input does not match the tool's input schema", Details: failures}
	}
	return policy, nil
}

// sameSource reports whether approvals come from the store itself.
func sameSource(a ApprovalSource, s storage.Store) bool {
	ai, si := any(a), any(s)
	t := reflect.TypeOf(ai)
	// Comparing interfaces holding the same uncomparable type would panic.
	return t == reflect.TypeOf(si) && t.Comparable() && ai == si
}

// beginFailed turns a refused admission into the caller's error.
func (g *Gateway) beginFailed(ctx context.Context, principal, key, fp string, built []builtLimit, err error, now time.Time) (*CallResult, error) {
	var limitErr *storage.LimitError
	switch {
	case errors.Is(err, storage.ErrIdempotencyConflict):
		// A concurrent request claimed the key between our read and our claim.
		rec, err := g.store.GetIdempotency(ctx, principal, key)
		if err != nil {
			return nil, internalError(err)
		}
		res, err := g.existingRecord(rec, fp, now)
		if res == nil && err == nil {
			err = newError(CodeIdempotencyKeyInUse, "a request with this Idempotency-Key is still in progress; retry later")
		}
		return res, err
	case errors.Is(err, storage.ErrQuoteUsed):
		return nil, newError(CodeQuoteUsed, "the quote was already used by another call; request a new quote")
	case errors.Is(err, storage.ErrQuoteNotFound):
		return nil, newError(CodeQuoteNotFound, "the quote does not exist for this caller")
	case errors.As(err, &limitErr):
		return nil, limitError(built, limitErr, now)
	}
	return nil, internalError(err)
}

// limitError reports rate limits before spend limits: a rate-limited caller
// should wait, not raise a budget.
func limitError(built []builtLimit, le *storage.LimitError, now time.Time) *Error {
	var violations []string
	var retryAt time.Time
	for _, f := range le.Failures {
		b := built[f.Index]
		if b.limit.Measure == storage.MeasureCalls {
			at := f.Oldest.Add(b.window)
			if f.Oldest.IsZero() {
				at = now.Add(b.window) // a limit of zero never frees up; say when to look again
			}
			if at.After(retryAt) {
				retryAt = at
			}
			continue
		}
		violations = append(violations, spendViolation(b.kind, b.limit.Max))
	}
	if !retryAt.IsZero() {
		// A call stays in its window up to and including oldest+window, so
		// the first whole second strictly after that is when a retry succeeds.
		wait := retryAt.Sub(now).Truncate(time.Second) + time.Second
		return &Error{Code: CodeRateLimited, Message: fmt.Sprintf("too many calls; retry in %d seconds", int(wait.Seconds())), RetryAfter: wait}
	}
	return &Error{Code: CodeSpendLimitExceeded, Message: "the call would break your spend controls", Violations: violations}
}

// execute calls the provider and turns whatever comes back into an
// execution result. Nothing the provider returns reaches anything but the
// output field, and only after normalization and validation.
func (g *Gateway) execute(ctx context.Context, v *registry.Version, q storage.Quote, id uuid.UUID, input []byte, abandon *registry.UpstreamError) Execution {
	exec := Execution{
		ID:     id.String(),
		Tool:   toolRef(v.Tool),
		Status: StatusFailed,
		Cost:   Cost{PriceUSD: usd(q.PriceUSD), FeeUSD: usd(q.FeeUSD), TotalUSD: usd(q.TotalUSD), Currency: "USD"},
		Output: json.RawMessage("null"),
	}
	fail := func(err error) Execution {
		var ue *registry.UpstreamError
		if !errors.As(err, &ue) {
			ue = registry.Upstreamf(registry.CodeUpstreamInvalidResponse, "the provider's answer could not be read as this tool's output")
		}
		exec.Error = &ExecutionError{Code: ue.Code, Message: ue.Message}
		g.log.InfoContext(ctx, "execution failed", "execution", exec.ID, "tool", v.Tool.Slug, "code", ue.Code)
		return exec
	}
	if abandon != nil {
		return fail(abandon)
	}
	if v.Output == nil {
		return fail(registry.Upstreamf(registry.CodeOutputInvalid, "%s declares no output schema, so its output cannot be checked", v.Tool.Slug))
	}
	upReq, err := v.Tool.BuildRequest(ctx, v.Origin, input)
	if err != nil {
		return fail(registry.Upstreamf(registry.CodeUpstreamUnavailable, "the upstream request could not be built"))
	}
	resp, err := g.upstream.do(ctx, v, upReq)
	if err != nil {
		return fail(err)
	}
	if !utf8.Valid(resp.Body) {
		// Decoders would quietly replace the bad bytes; an answer that is
		// not text is not an answer.
		return fail(registry.Upstreamf(registry.CodeUpstreamInvalidResponse, "the provider's answer is not valid UTF-8"))
	}
	out, err := normalize(v, resp)
	if err != nil {
		return fail(err)
	}
	raw, err := json.Marshal(out)
	if err != nil {
		return fail(err)
	}
	if failures := v.Output.Validate(raw, "output"); failures != nil {
		return fail(registry.Upstreamf(registry.CodeOutputInvalid, "the provider's answer does not match the tool's output schema at %s: %s", failures[0].Path, failures[0].Message))
	}
	exec.Status = StatusCompleted
	exec.Output = raw
	return exec
}

// normalize runs the tool's mapping, turning a panic on hostile input into
// a failed execution rather than a crashed gateway.
func normalize(v *registry.Version, resp registry.UpstreamResponse) (out any, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = registry.Upstreamf(registry.CodeUpstreamInvalidResponse, "the provider's answer could not be read as this tool's output")
		}
	}()
	return v.Tool.Normalize(resp)
}

// rememberFirstUse records that the caller approved this exact digest, so a
// first_use tool needs no approval again until its digest changes. A
// standing approval the caller set themselves is left as it is.
func (g *Gateway) rememberFirstUse(ctx context.Context, principal string, v *registry.Version) {
	existing, err := g.store.GetApproval(ctx, principal, v.Tool.ID)
	if err == nil && existing.ManifestDigest == v.Digest {
		return
	}
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return
	}
	if err == nil && existing.Mode != storage.ApprovalFirstUse {
		return
	}
	a := storage.Approval{Principal: principal, ToolID: v.Tool.ID, ManifestDigest: v.Digest, Mode: storage.ApprovalFirstUse, UpdatedAt: g.clock.Now().UTC()}
	if err := g.store.PutApproval(ctx, a); err != nil {
		g.log.WarnContext(ctx, "could not remember first use", "tool", v.Tool.Slug, "error", err)
	}
}

func isCode(err error, code Code) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// GetExecution returns one of the caller's executions; another caller's is
// reported as not found.
func (g *Gateway) GetExecution(ctx context.Context, principal, id string) (*CallResult, error) {
	if err := validPrincipal(principal); err != nil {
		return nil, err
	}
	eid, err := uuid.Parse(id)
	if err != nil {
		return nil, newError(CodeExecutionNotFound, "no execution %q exists for this caller", id)
	}
	e, err := g.store.GetExecution(ctx, eid)
	if errors.Is(err, storage.ErrNotFound) || (err == nil && (e.Principal != principal || e.Status == storage.ExecutionRunning)) {
		return nil, newError(CodeExecutionNotFound, "no finished execution %s exists for this caller", id)
	}
	if err != nil {
		return nil, internalError(err)
	}
	res, err := replay(e.Response)
	if err != nil {
		return nil, err
	}
	res.Replayed = false
	return res, nil
}
