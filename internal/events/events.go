// Package events builds the events the gateway writes to its store's
// outbox (section 28): each one's stable id, its webhook-id, and its body,
// {"type", "timestamp", "data"}, as a receiver gets it.
//
// Ids are stable so that a retry, or a second process writing the same
// event, is the same event: "approval_request.created:<request id>",
// "approval_request.decided:<request id>", "execution.ambiguous:<execution
// id>", "budget.threshold:<budget>:<window>:<fraction>:<first day>" and
// "budget.limit_reached:<budget>:<window>:<first day>", the first day of
// the window's period in the budget's time zone.
package events

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// body is an event's delivered body.
type body struct {
	Type      toolgatetype.ApprovalEventType `json:"type"`
	Timestamp time.Time                      `json:"timestamp"`
	Data      any                            `json:"data"`
}

// New is the event of type typ with id id, caused at at, with data.
func New(typ toolgatetype.ApprovalEventType, id string, at time.Time, data any) (storage.NewEvent, error) {
	payload, err := json.Marshal(body{Type: typ, Timestamp: at.UTC(), Data: data})
	if err != nil {
		return storage.NewEvent{}, fmt.Errorf("events: encoding %s: %w", typ, err)
	}
	return storage.NewEvent{ID: id, Type: string(typ), Payload: payload, CreatedAt: at}, nil
}

// ApprovalRequest is a request made or decided: its data the request as
// the API shows it after the event, without approveUrl, which the sender
// adds from the operator's configuration.
func ApprovalRequest(typ toolgatetype.ApprovalEventType, r toolgatetype.ApprovalRequest, at time.Time) (storage.NewEvent, error) {
	r.ApproveURL = ""
	return New(typ, string(typ)+":"+r.ID, at, r)
}

// Ambiguous is an execution finished ambiguous, its data the execution as
// GET /v1/executions/{id} shows it.
func Ambiguous(e toolgatetype.ExecutionSummary, at time.Time) (storage.NewEvent, error) {
	return New(toolgatetype.ExecutionAmbiguous, string(toolgatetype.ExecutionAmbiguous)+":"+e.ID, at, e)
}

// ThresholdID is the id of a budget window's crossing of fraction in the
// period starting on fromDay.
func ThresholdID(budget string, window toolgatetype.BudgetWindowKind, fraction float64, fromDay string) string {
	return fmt.Sprintf("%s:%s:%s:%s:%s", toolgatetype.BudgetThresholdCrossed, budget, window,
		strconv.FormatFloat(fraction, 'f', -1, 64), fromDay)
}

// Threshold is a crossing of th.Fraction in the period starting on
// fromDay; the store sets its usedUsd when it writes it.
func Threshold(th toolgatetype.BudgetThreshold, fromDay string, at time.Time) (storage.NewEvent, error) {
	return New(toolgatetype.BudgetThresholdCrossed, ThresholdID(th.Budget.ID, th.Window, th.Fraction, fromDay), at, th)
}

// LimitReached is a budget window's first refusal in its period.
func LimitReached(lr toolgatetype.BudgetLimitReached, at time.Time) (storage.NewEvent, error) {
	id := fmt.Sprintf("%s:%s:%s:%s", toolgatetype.BudgetLimitReachedEvent, lr.Budget.ID, lr.Window, lr.PeriodStart)
	return New(toolgatetype.BudgetLimitReachedEvent, id, at, lr)
}
