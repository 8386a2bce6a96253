// Package executor runs one call of a tool through the store, River's
// internal/jobexecutor as the model: an Executor holds its dependencies,
// and Execute admits the call, claims its key, runs it and records its
// result, answering a refusal from an earlier call under the same key when
// there is one. What the call is (its checks, the provider, the receipt)
// is the gateway's, given as Steps; what becomes of it is told to Hooks,
// for metrics, traces and logs.
package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

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

// Steps are what the gateway decides and does for one call. A refusal they
// return is the caller's *toolgatetype.Error.
type Steps interface {
	// Reads are what the call is decided on (storage.Store.AdmitCall).
	Reads(ctx context.Context, now time.Time) (storage.Reads, error)
	// Decide decides the call on read, the store's answer to Reads,
	// returning what the store is to admit (Begin without its principal,
	// key, execution id, lease and times, which Execute sets), or the
	// caller's refusal. The store may ask again, on a fresher answer,
	// before it admits anything (see storage.Store.AdmitCall): the last
	// decision is the call's.
	Decide(ctx context.Context, read storage.ReadResult, now time.Time) (storage.Begin, error)
	// Resume admits a retry that may take over an abandoned run of the
	// same request, which passed Decide when it began.
	Resume(ctx context.Context, now time.Time) (storage.Begin, error)
	// Refused is the caller's refusal for err, which refused what Decide
	// or Resume returned: the store's refusal, or Decide's own, which the
	// store returns as it is.
	Refused(err error, now time.Time) error
	// Run runs the claimed call: it calls the provider, or not, and says
	// what to record.
	Run(ctx context.Context, c Claim) (Run, error)
	// Result is the caller's result of a run recorded as stored (the
	// response the store kept).
	Result(ctx context.Context, c Claim, r Run, stored []byte) *toolgatetype.CallResult
}

// Hooks are told what becomes of a call.
type Hooks interface {
	// Claimed: the store admitted the call, or a retry took it over.
	Claimed(ctx context.Context, b storage.BeginResult)
	// Recorded: the run's result is recorded.
	Recorded(ctx context.Context, c Claim, r Run)
}

// Claim is a call the store admitted: its execution and the lease the run
// holds on its key.
type Claim struct {
	Execution storage.Execution
	Lease     uuid.UUID
	TookOver  bool
}

// Run is what a run of a call records.
type Run struct {
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
}

// Execute runs the call s under k. A refusal is answered, as
// an Idempotency-Key promises, by an earlier call under the key first: a
// finished one is replayed, another request under the key is refused, and
// an unfinished run of this very request is resumed, which the store
// allows only once that run's lease has ended. Most calls are new, so the
// key's record is read only then.
//
// Admitted, the call no longer answers to ctx's cancellation: it runs to
// its end and its result is recorded.
func (e *Executor) Execute(ctx context.Context, k Key, s Steps, h Hooks) (*toolgatetype.CallResult, error) {
	now := e.Now().UTC()
	cl, err := e.admitAndClaim(ctx, k, s, h, now)
	if err != nil {
		return e.answerRefusal(ctx, k, s, h, err, now)
	}
	return e.run(ctx, k, s, h, cl)
}

// admitAndClaim is a call's reads, its decision and its admission, which
// the store does as one step (storage.Store.AdmitCall): it counts the
// rate and spend windows with what is in flight, reserves the amount,
// uses the quote and claims the key.
func (e *Executor) admitAndClaim(ctx context.Context, k Key, s Steps, h Hooks, now time.Time) (Claim, error) {
	r, err := s.Reads(ctx, now)
	if err != nil {
		return Claim{}, err
	}
	var lease uuid.UUID // the last decision's, which is what is admitted
	begun, err := e.Store.AdmitCall(ctx, r, func(read storage.ReadResult) (storage.Begin, error) {
		b, err := s.Decide(ctx, read, now)
		if err != nil {
			return storage.Begin{}, err
		}
		e.complete(&b, k, now)
		lease = b.LeaseToken
		return b, nil
	})
	if err != nil {
		return Claim{}, s.Refused(err, now)
	}
	h.Claimed(ctx, begun)
	return Claim{Execution: begun.Execution, Lease: lease, TookOver: begun.TookOver}, nil
}

// claim is the store's one atomic step that admits a call Resume
// returned: as admitAndClaim admits one, or, finding an abandoned run of
// this same request whose lease has ended, by taking it over.
func (e *Executor) claim(ctx context.Context, k Key, s Steps, h Hooks, b storage.Begin, now time.Time) (Claim, error) {
	e.complete(&b, k, now)
	begun, err := e.Store.BeginExecution(ctx, b)
	if err != nil {
		return Claim{}, s.Refused(err, now)
	}
	h.Claimed(ctx, begun)
	return Claim{Execution: begun.Execution, Lease: b.LeaseToken, TookOver: begun.TookOver}, nil
}

// complete sets what Execute owns of b: the key it is made under, a new
// execution id and lease, and the times.
func (e *Executor) complete(b *storage.Begin, k Key, now time.Time) {
	b.Principal, b.Key, b.Fingerprint = k.Principal, k.Key, k.Fingerprint
	b.ExecutionID, b.LeaseToken = uuid.New(), uuid.New()
	b.LeaseUntil, b.Now = now.Add(e.Lease), now
}

// answerRefusal answers a call refused before it ran (see Execute).
func (e *Executor) answerRefusal(ctx context.Context, k Key, s Steps, h Hooks, refusal error, now time.Time) (*toolgatetype.CallResult, error) {
	if toolgatetype.IsCode(refusal, toolgatetype.CodeInternal) {
		return nil, refusal
	}
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
	b, err := s.Resume(ctx, now)
	if err != nil {
		return nil, err
	}
	cl, err := e.claim(ctx, k, s, h, b, now)
	if err != nil {
		return nil, held(untilLeaseEnds(err, rec.LeaseUntil, now), rec)
	}
	return e.run(ctx, k, s, h, cl)
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
func (e *Executor) run(ctx context.Context, k Key, s Steps, h Hooks, cl Claim) (*toolgatetype.CallResult, error) {
	// Admitted, the call no longer answers to its caller's context.
	if e.Detach != nil {
		ctx = e.Detach(ctx)
	} else {
		ctx = context.WithoutCancel(ctx)
	}
	r, err := s.Run(ctx, cl)
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
	h.Recorded(ctx, cl, r)
	return s.Result(ctx, cl, r, stored), nil
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
