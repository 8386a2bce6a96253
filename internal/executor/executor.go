// Package executor runs one call of a tool through the store, River's
// internal/jobexecutor as the model: an Executor holds its dependencies,
// and Execute admits the call, claims its key, runs it and records its
// result, answering a refusal from an earlier call under the same key when
// there is one. The call is data, a Call (River's WorkUnit): how it is
// admitted, what it runs, and the Hooks told what becomes of it, which is
// how the gateway's metrics, traces and logs see it.
package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// Executor runs calls on one store.
type Executor struct {
	Store storage.Store
	// Now is the time a call is admitted and finished at.
	Now func() time.Time
	// Lease is how long a run holds its key before a retry of the same
	// request may take it over.
	Lease time.Duration
	// Detach cuts an admitted call's context loose from its caller's
	// cancellation; nil means context.WithoutCancel.
	Detach func(context.Context) context.Context
}

// Key is the Idempotency-Key a call is made under, and the fingerprint
// that tells a retry of its request from another request.
type Key struct {
	Principal, Key, Fingerprint string
}

// Call is one call as the executor runs it, River's WorkUnit as the model:
// data describing the call rather than an implementation of it. The gateway
// builds one per call; Execute runs it.
type Call struct {
	// Key is the Idempotency-Key the call is made under.
	Key Key
	// Admit is how the store is to admit the call.
	Admit Admit
	// Run is what the admitted call runs.
	Run Run
	// Hooks are told what becomes of the call, in order; a user of the
	// executor may add its own beside the gateway's.
	Hooks []Hooks
	// Now is the time the call is admitted at, which Execute sets.
	Now time.Time
}

// Admit is how a call is admitted: what it is decided on, its decision,
// and how a refusal of it reads. A refusal these return is the caller's
// *toolgatetype.Error.
type Admit struct {
	// Reads are what the call is decided on (storage.Store.AdmitCall).
	Reads func(ctx context.Context) (storage.Reads, error)
	// Decide decides the call on read, the store's answer to Reads,
	// returning what the store is to admit (Begin without its principal,
	// key, execution id, lease and times, which Execute sets), or the
	// caller's refusal. The store may ask again, on a fresher answer,
	// before it admits anything (see storage.Store.AdmitCall): the last
	// decision is the call's.
	Decide func(ctx context.Context, read storage.ReadResult, now time.Time) (storage.Begin, error)
	// Resume admits a retry that may take over an abandoned run of the
	// same request, which passed Decide when it began.
	Resume func(ctx context.Context, now time.Time) (storage.Begin, error)
	// Explain is the caller's refusal for err, which refused what Decide
	// or Resume returned: the store's refusal, or Decide's own, which the
	// store returns as it is.
	Explain func(err error, now time.Time) error
}

// Run is what an admitted call runs: a version of a tool, on the call's
// canonical input.
type Run struct {
	Tool  *registry.Version
	Input []byte
	// Do runs the claimed call: it calls the provider, or not, and says
	// what to record and what the caller is answered, whose Body Execute
	// sets to the response as the store kept it.
	Do func(ctx context.Context, c Claim) (Record, error)
}

// Hooks are told what becomes of a call, at the executor's own points.
// Every field is optional.
type Hooks struct {
	// Begin: the call begins; the context it returns is the call's from
	// then on (a span's, say).
	Begin func(ctx context.Context, c *Call) context.Context
	// Claimed: the store admitted the call, or a retry took it over.
	Claimed func(ctx context.Context, c *Call, b storage.BeginResult)
	// Refused: the store refused to admit the call, err being the
	// caller's refusal (Admit.Explain's).
	Refused func(ctx context.Context, c *Call, err error)
	// Ran: the run's result is recorded.
	Ran func(ctx context.Context, c *Call, cl Claim, r *Record)
	// Finished: the call is over, with the caller's answer.
	Finished func(ctx context.Context, c *Call, res *toolgatetype.CallResult, err error)
}

// Claim is a call the store admitted: its execution and the lease the run
// holds on its key.
type Claim struct {
	Execution storage.Execution
	Lease     uuid.UUID
	TookOver  bool
}

// Record is what a run of a call records, and answers.
type Record struct {
	Status   toolgatetype.Status
	Response []byte
	Finished time.Time
	// Seal is storage.Finish.Seal.
	Seal func(seq int64, prev string) (storage.Sealed, error)
	// Events and Alerts are storage.Finish's: the events written with
	// the run's result.
	Events []storage.NewEvent
	Alerts []storage.BudgetAlert
	// For Hooks: the provider's HTTP status (0: no answer) and the error
	// code of a run that did not complete.
	UpstreamStatus int
	ErrorCode      string
	// Result is the caller's answer once the run is recorded.
	Result *toolgatetype.CallResult
}

// Execute runs the call c. A refusal is answered, as an Idempotency-Key
// promises, by an earlier call under the key first: a finished one is
// replayed, another request under the key is refused, and an unfinished
// run of this very request is resumed, which the store allows only once
// that run's lease has ended. Most calls are new, so the key's record is
// read only then.
//
// Admitted, the call no longer answers to ctx's cancellation: it runs to
// its end and its result is recorded.
func (e *Executor) Execute(ctx context.Context, c *Call) (*toolgatetype.CallResult, error) {
	for i := range c.Hooks {
		if h := &c.Hooks[i]; h.Begin != nil {
			ctx = h.Begin(ctx, c)
		}
	}
	res, err := e.execute(ctx, c)
	for i := range c.Hooks {
		if h := &c.Hooks[i]; h.Finished != nil {
			h.Finished(ctx, c, res, err)
		}
	}
	return res, err
}

// execute is Execute between its hooks' Begin and Finished.
func (e *Executor) execute(ctx context.Context, c *Call) (*toolgatetype.CallResult, error) {
	c.Now = e.Now().UTC()
	cl, err := e.admitAndClaim(ctx, c)
	if err != nil {
		return e.answerRefusal(ctx, c, err)
	}
	return e.run(ctx, c, cl)
}

// admitAndClaim is a call's reads, its decision and its admission, which
// the store does as one step (storage.Store.AdmitCall): it counts the
// rate and spend windows with what is in flight, reserves the amount,
// uses the quote and claims the key.
func (e *Executor) admitAndClaim(ctx context.Context, c *Call) (Claim, error) {
	r, err := c.Admit.Reads(ctx)
	if err != nil {
		return Claim{}, err
	}
	now := c.Now
	var lease uuid.UUID // the last decision's, which is what is admitted
	begun, err := e.Store.AdmitCall(ctx, r, func(read storage.ReadResult) (storage.Begin, error) {
		b, err := c.Admit.Decide(ctx, read, now)
		if err != nil {
			return storage.Begin{}, err
		}
		e.complete(&b, c.Key, now)
		lease = b.LeaseToken
		return b, nil
	})
	if err != nil {
		return Claim{}, e.refused(ctx, c, err)
	}
	e.claimed(ctx, c, begun)
	return Claim{Execution: begun.Execution, Lease: lease, TookOver: begun.TookOver}, nil
}

// claim is the store's one atomic step that admits a call Resume
// returned: as admitAndClaim admits one, or, finding an abandoned run of
// this same request whose lease has ended, by taking it over.
func (e *Executor) claim(ctx context.Context, c *Call, b storage.Begin) (Claim, error) {
	e.complete(&b, c.Key, c.Now)
	begun, err := e.Store.BeginExecution(ctx, b)
	if err != nil {
		return Claim{}, e.refused(ctx, c, err)
	}
	e.claimed(ctx, c, begun)
	return Claim{Execution: begun.Execution, Lease: b.LeaseToken, TookOver: begun.TookOver}, nil
}

// refused is the caller's refusal for err, the store's refusal to admit
// c, told to c's hooks.
func (e *Executor) refused(ctx context.Context, c *Call, err error) error {
	err = c.Admit.Explain(err, c.Now)
	for i := range c.Hooks {
		if h := &c.Hooks[i]; h.Refused != nil {
			h.Refused(ctx, c, err)
		}
	}
	return err
}

// claimed tells c's hooks the store admitted it.
func (e *Executor) claimed(ctx context.Context, c *Call, begun storage.BeginResult) {
	for i := range c.Hooks {
		if h := &c.Hooks[i]; h.Claimed != nil {
			h.Claimed(ctx, c, begun)
		}
	}
}

// complete sets what Execute owns of b: the key it is made under, a new
// execution id and lease, and the times.
func (e *Executor) complete(b *storage.Begin, k Key, now time.Time) {
	b.Principal, b.Key, b.Fingerprint = k.Principal, k.Key, k.Fingerprint
	b.ExecutionID, b.LeaseToken = uuid.New(), uuid.New()
	b.LeaseUntil, b.Now = now.Add(e.Lease), now
}

// answerRefusal answers a call refused before it ran (see Execute).
func (e *Executor) answerRefusal(ctx context.Context, c *Call, refusal error) (*toolgatetype.CallResult, error) {
	if toolgatetype.IsCode(refusal, toolgatetype.CodeInternal) {
		return nil, refusal
	}
	k, now := c.Key, c.Now
	rec, err := e.Store.GetIdempotency(ctx, k.Principal, k.Key)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return nil, refusal
	case err != nil:
		return nil, Internal(err)
	case rec.Fingerprint != k.Fingerprint:
		return nil, held(KeyReused(), rec)
	case rec.Finished:
		return Replay(rec.Response)
	}
	b, err := c.Admit.Resume(ctx, now)
	if err != nil {
		return nil, err
	}
	cl, err := e.claim(ctx, c, b)
	if err != nil {
		return nil, held(untilLeaseEnds(err, rec.LeaseUntil, now), rec)
	}
	return e.run(ctx, c, cl)
}

// untilLeaseEnds gives a key_in_use refusal the wait until the run that
// holds the key loses its lease, when a retry takes the call over if that
// run is gone (a process killed mid-call): at least a second, so that a
// client never retries in a busy loop.
func untilLeaseEnds(err error, leaseUntil, now time.Time) error {
	var te *toolgatetype.Error
	if !errors.As(err, &te) || te.Code != toolgatetype.CodeIdempotencyKeyInUse || leaseUntil.IsZero() {
		return err
	}
	wait := leaseUntil.Sub(now)
	if rounded := wait.Truncate(time.Second); rounded < wait {
		wait = rounded + time.Second
	}
	te.RetryAfter = max(wait, time.Second)
	return te
}

// run runs an admitted call and records its outcome, charging a completed
// execution and releasing the reservation of a failed one, in one step of
// the store.
func (e *Executor) run(ctx context.Context, c *Call, cl Claim) (*toolgatetype.CallResult, error) {
	// Admitted, the call no longer answers to its caller's context.
	if e.Detach != nil {
		ctx = e.Detach(ctx)
	} else {
		ctx = context.WithoutCancel(ctx)
	}
	k := c.Key
	r, err := c.Run.Do(ctx, cl)
	if err != nil {
		return nil, err
	}
	var stored []byte
	err = e.Store.FinishExecution(ctx, storage.Finish{
		Principal:   k.Principal,
		Key:         k.Key,
		ExecutionID: cl.Execution.ID,
		LeaseToken:  cl.Lease,
		Status:      r.Status,
		Charged:     r.Status == toolgatetype.StatusCompleted,
		Response:    r.Response,
		Now:         r.Finished,
		Events:      r.Events,
		Alerts:      r.Alerts,
		Seal: func(seq int64, prev string) (storage.Sealed, error) {
			out, err := r.Seal(seq, prev)
			stored = storage.WithReceipt(r.Response, out.Receipt)
			return out, err
		},
	})
	if errors.Is(err, storage.ErrLeaseLost) {
		// Another run took this call over; its result is the one that counts.
		rec, err := e.Store.GetIdempotency(ctx, k.Principal, k.Key)
		if err == nil && rec.Finished {
			return Replay(rec.Response)
		}
		if err == nil {
			return nil, untilLeaseEnds(KeyInUse(), rec.LeaseUntil, e.Now().UTC())
		}
		return nil, KeyInUse()
	}
	if err != nil {
		return nil, Internal(err)
	}
	r.Result.Body = stored
	for i := range c.Hooks {
		if h := &c.Hooks[i]; h.Ran != nil {
			h.Ran(ctx, c, cl, &r)
		}
	}
	return r.Result, nil
}

// Held is the cause of a refusal on a key found held by another run or
// another request: the key's record as the refusal read it, for a door
// that answers such a call from it (errors.As) without reading it again.
type Held struct {
	Record storage.IdempotencyRecord
}

func (h *Held) Error() string { return "the key's record was read with the refusal" }

// held gives err, a refusal on the key, the record rec it was read with,
// when it is such a refusal and has no cause of its own.
func held(err error, rec storage.IdempotencyRecord) error {
	var te *toolgatetype.Error
	if errors.As(err, &te) && te.Err == nil &&
		(te.Code == toolgatetype.CodeIdempotencyKeyInUse || te.Code == toolgatetype.CodeIdempotencyKeyReused) {
		te.Err = &Held{Record: rec}
	}
	return err
}

// Replay answers a retry with the result stored under its key.
func Replay(body []byte) (*toolgatetype.CallResult, error) {
	var exec toolgatetype.Execution
	if err := json.Unmarshal(body, &exec); err != nil {
		return nil, Internal(fmt.Errorf("stored response is unreadable: %w", err))
	}
	return &toolgatetype.CallResult{Execution: exec, Body: body, Replayed: true}, nil
}

// Internal is the refusal that hides cause from the caller but keeps it
// for logs.
func Internal(cause error) *toolgatetype.Error {
	return &toolgatetype.Error{Code: toolgatetype.CodeInternal, Message: "the gateway could not complete the request", Err: cause}
}

// KeyReused answers another request under a key already used.
func KeyReused() *toolgatetype.Error {
	return toolgatetype.Errorf(toolgatetype.CodeIdempotencyKeyReused, "this Idempotency-Key was used for a different request; use a new key for a new call")
}

// KeyInUse answers a request whose key another run still holds.
func KeyInUse() *toolgatetype.Error {
	return toolgatetype.Errorf(toolgatetype.CodeIdempotencyKeyInUse, "a request with this Idempotency-Key is still in progress; retry later")
}
