package toolgate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/toolgate/toolgate/internal/executor"
	"github.com/toolgate/toolgate/internal/receipting"
	"github.com/toolgate/toolgate/internal/toolrun"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// ResolveExecution records approver's finding about an ambiguous execution
// of one of the principals it approves for: completed (the provider ran it:
// it is charged, its output stays unknown) or failed (it did not: its
// reserved amount is released). It returns the resolved execution, which a
// replay of the call's Idempotency-Key returns from then on.
//
// The store resolves atomically: of two resolutions racing, one wins and the
// other gets execution_already_resolved, so the amount is charged or
// released exactly once. An execution that is not ambiguous gets
// execution_not_ambiguous; one of a principal the approver does not approve
// for is execution_not_found, as if it did not exist.
func (g *Gateway) ResolveExecution(ctx context.Context, approver, id string, r toolgatetype.ResolveRequest) (*toolgatetype.CallResult, error) {
	if err := validPrincipal(approver); err != nil {
		return nil, err
	}
	if r.Outcome != toolgatetype.StatusCompleted && r.Outcome != toolgatetype.StatusFailed {
		e := newError(toolgatetype.CodeInvalidRequest, "outcome must be %q or %q", toolgatetype.StatusCompleted, toolgatetype.StatusFailed)
		e.Parameter = "outcome"
		return nil, e
	}
	if n := utf8.RuneCountInString(r.Note); n > toolgatetype.MaxResolutionNote || !utf8.ValidString(r.Note) {
		e := newError(toolgatetype.CodeInvalidRequest, "note must be UTF-8 text of at most %d characters", toolgatetype.MaxResolutionNote)
		e.Parameter = "note"
		return nil, e
	}
	if err := textError("note", r.Note); err != nil {
		return nil, err
	}
	notFound := newError(toolgatetype.CodeExecutionNotFound, "no execution %q exists for you", id)
	eid, err := uuid.Parse(id)
	if err != nil {
		return nil, notFound
	}
	e, err := g.store.GetExecution(ctx, eid)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, notFound
	}
	if err != nil {
		return nil, internalError(err)
	}
	ok, err := g.approves(ctx, approver, e.Principal)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, notFound
	}
	if e.Status != storage.ExecutionAmbiguous {
		return nil, notAmbiguous(e)
	}
	stored, err := executor.Replay(e.Response)
	if err != nil {
		return nil, err
	}
	now := g.clock.Now().UTC()
	prior := stored.Execution.Receipt
	exec := resolved(stored.Execution, r, approver, now)
	exec.Receipt = nil // the resolution's own is added below
	body, err := toolrun.Encode(exec)
	if err != nil {
		return nil, internalError(err)
	}
	var alerts []storage.BudgetAlert
	if r.Outcome == toolgatetype.StatusCompleted {
		alerts = g.budgetAlerts(e.Budgets, now)
	}
	var sealed toolgatetype.SignedReceipt
	var kept []byte
	seal := g.receipts.Signer.Seal(receipting.Resolution(prior, e, &exec), &sealed)
	_, err = g.store.ResolveExecution(ctx, storage.Resolve{
		ExecutionID: eid,
		Outcome:     r.Outcome,
		ResolvedBy:  approver,
		Note:        r.Note,
		Response:    body,
		Now:         now,
		Alerts:      alerts,
		Seal: func(seq int64, prev string) (storage.Sealed, error) {
			out, err := seal(seq, prev)
			kept = storage.WithReceipt(body, out.Receipt)
			return out, err
		},
	})
	switch {
	case errors.Is(err, storage.ErrAlreadyResolved):
		return nil, newError(toolgatetype.CodeExecutionAlreadyResolved, "execution %s was already resolved", id)
	case errors.Is(err, storage.ErrNotAmbiguous):
		return nil, newError(toolgatetype.CodeExecutionNotAmbiguous, "execution %s is not ambiguous: its outcome is known", id)
	case errors.Is(err, storage.ErrNotFound):
		return nil, notFound
	case err != nil:
		return nil, internalError(err)
	}
	if len(alerts) > 0 {
		g.events.Wake()
	}
	g.log.InfoContext(ctx, "ambiguous call resolved", "execution", id, "principal", e.Principal, "outcome", string(r.Outcome), "resolvedBy", approver)
	exec.Receipt = &sealed
	return &toolgatetype.CallResult{Execution: exec, Body: kept}, nil
}

// notAmbiguous refuses the resolution of an execution whose outcome is
// known, saying which: one already resolved is told apart from one that
// never was ambiguous.
func notAmbiguous(e storage.Execution) error {
	if e.Resolution != nil {
		return newError(toolgatetype.CodeExecutionAlreadyResolved, "execution %s was already resolved as %s by %s", e.ID, e.Resolution.Outcome, e.Resolution.ResolvedBy)
	}
	return newError(toolgatetype.CodeExecutionNotAmbiguous, "execution %s is %s, not ambiguous: its outcome is known", e.ID, e.Status)
}

// resolved is the ambiguous execution exec as a person resolved it. Its
// output stays null either way: nobody saw what the provider answered.
func resolved(exec toolgatetype.Execution, r toolgatetype.ResolveRequest, by string, at time.Time) toolgatetype.Execution {
	exec.Status = r.Outcome
	exec.Output = json.RawMessage("null")
	exec.Resolution = &toolgatetype.Resolution{Outcome: r.Outcome, ResolvedBy: by, ResolvedAt: at, Note: r.Note}
	exec.Error = nil
	if r.Outcome == toolgatetype.StatusFailed {
		exec.Error = &toolgatetype.ExecutionError{Code: toolgatetype.CodeResolvedFailed,
			Message: fmt.Sprintf("%s found that the provider did not run this call; its amount was released and nothing was charged", by)}
	}
	return exec
}
