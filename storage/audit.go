package storage

import (
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/toolgate/toolgate/toolgatetype"
)

// The audit trail: what ListExecutions and SpendSummary are asked.

// ExecutionQuery selects executions for ListExecutions.
type ExecutionQuery struct {
	// Principals whose executions are listed; at least one.
	Principals []string
	// ToolSlug keeps only one tool's executions; empty means every tool.
	ToolSlug string
	// Status keeps only the executions of one status: completed, failed,
	// or ambiguous (those not resolved yet; a resolved one has the status
	// it was resolved to); empty means every finished one.
	Status ExecutionStatus
	// Since and Until keep executions created in [Since, Until); a zero
	// bound is open.
	Since, Until time.Time
	// After is the position of the last execution of the previous page;
	// nil starts from the newest.
	After *ExecutionPosition
	// Limit is the most executions returned, from 1 to MaxListLimit.
	Limit int
}

// MaxListLimit is the most executions one ListExecutions returns.
const MaxListLimit = 1000

// ExecutionPosition is where an execution stands in ListExecutions' order.
type ExecutionPosition struct {
	CreatedAt time.Time
	ID        uuid.UUID
}

// SpendQuery selects what SpendSummary sums.
type SpendQuery struct {
	// Principals whose spend is summed; at least one, unless Budget is set.
	Principals []string
	// Since and Until bound the executions' creation: [Since, Until).
	Since, Until time.Time
	GroupBy      toolgatetype.SpendGrouping

	// Budget, when set, sums instead the charged calls that count in that
	// budget (Begin.Budgets), of every principal, on the budget's days in
	// [FromDay, UntilDay) (YYYY-MM-DD, each call on the Day its BudgetDay
	// gave; an empty bound is open). Principals, Since and Until are then
	// not looked at. GroupBy may also be SpendByPrincipal, and SpendByDay
	// groups by those days. It sums what was charged whenever the execution
	// behind it was pruned: a budget's spend is kept for as long as the
	// ledger's history (Prune.LedgerBefore).
	Budget            string
	FromDay, UntilDay string
}

// SpendGroup is one group of a SpendSummary. It is not
// toolgatetype.SpendGroup, which shows the sum as a string of 4 decimals
// to callers: the store adds exact decimals, and the gateway formats them.
type SpendGroup struct {
	Key      string          // the tool's slug, the day as YYYY-MM-DD, or the principal
	TotalUSD decimal.Decimal // the sum of the charged amounts
	Count    int64           // completed executions
}

// Check reports what makes q unusable: no principal, a status other than
// completed, failed or ambiguous, or a limit out of range. Backends call it
// first.
func (q ExecutionQuery) Check() error {
	switch {
	case len(q.Principals) == 0:
		return errors.New("storage: ListExecutions needs at least one principal")
	case q.Status != "" && q.Status != ExecutionCompleted && q.Status != ExecutionFailed &&
		q.Status != ExecutionAmbiguous:
		return fmt.Errorf("storage: ListExecutions cannot list executions %q", q.Status)
	case q.Limit < 1 || q.Limit > MaxListLimit:
		return fmt.Errorf("storage: ListExecutions limit %d is not from 1 to %d", q.Limit, MaxListLimit)
	}
	return nil
}

// Check reports what makes q unusable: no principal, or an unknown grouping.
func (q SpendQuery) Check() error {
	if q.Budget != "" {
		switch q.GroupBy {
		case toolgatetype.SpendByTool, toolgatetype.SpendByDay, toolgatetype.SpendByPrincipal:
			return nil
		}
		return fmt.Errorf("storage: SpendSummary cannot group by %q", q.GroupBy)
	}
	switch {
	case len(q.Principals) == 0:
		return errors.New("storage: SpendSummary needs at least one principal")
	case q.GroupBy != toolgatetype.SpendByTool && q.GroupBy != toolgatetype.SpendByDay:
		return fmt.Errorf("storage: SpendSummary cannot group by %q", q.GroupBy)
	}
	return nil
}
