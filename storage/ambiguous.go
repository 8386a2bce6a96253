package storage

import (
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// Ambiguous executions and their resolution: what FinishExecution is told
// when nobody knows whether the provider ran a request, and what
// ResolveExecution is told when a person has found out.

// ExecutionResolution is a person's finding about an ambiguous execution,
// as ResolveExecution recorded it.
type ExecutionResolution struct {
	Outcome    ExecutionStatus // completed or failed
	ResolvedBy string
	ResolvedAt time.Time
	Note       string
}

// Resolve is the input of ResolveExecution.
type Resolve struct {
	ExecutionID uuid.UUID
	Outcome     ExecutionStatus // completed or failed
	ResolvedBy  string          // who resolved it, as the resolution shows
	Note        string
	Now         time.Time // the resolution's time
	// Response is the resolved execution's response body, stored on the
	// execution and its idempotency record in place of the ambiguous one.
	Response []byte
	// Seal, when set, makes the receipt of the resolution, kept in the same
	// step (see Seal); nil keeps none.
	Seal Seal
	// Alerts are written in the same step when a resolution as completed
	// (a charge) makes their thresholds reached (see BudgetAlert).
	Alerts []BudgetAlert
}

// Check reports what makes f unusable by FinishExecution: a status
// other than completed, failed or ambiguous, or an ambiguous finish that
// asks to be charged. Backends call it first.
func (f Finish) Check() error {
	switch {
	case f.Status != ExecutionCompleted && f.Status != ExecutionFailed && f.Status != ExecutionAmbiguous:
		return fmt.Errorf("storage: cannot finish an execution as %q", f.Status)
	case f.Status == ExecutionAmbiguous && f.Charged:
		return errors.New("storage: an ambiguous execution keeps its reservation and cannot be charged")
	}
	return nil
}

// Check reports what makes r unusable by ResolveExecution: an outcome
// other than completed or failed. Backends call it first.
func (r Resolve) Check() error {
	if r.Outcome != ExecutionCompleted && r.Outcome != ExecutionFailed {
		return fmt.Errorf("storage: cannot resolve an execution as %q", r.Outcome)
	}
	return nil
}
