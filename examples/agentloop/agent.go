package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/shopspring/decimal"
	"github.com/toolgate/toolgate/toolgatetype"
)

// Approver stands in for the human an agent must ask before a call the
// policy does not cover. It is shown the exact manifest digest and the
// total, and says yes or no.
type Approver interface {
	Approve(ctx context.Context, tool toolgatetype.ToolRef, manifestDigest, totalUSD string) bool
}

// Agent drives goal-data through the gateway until the goal is achieved:
// quote, check the policy and the spend controls, ask for approval when the
// policy requires it, call, read the observation, next step.
//
// It knows the gateway only as a toolgatetype.Caller, so the same agent runs
// on a gateway embedded in its process (toolgate.Gateway.For) and on a
// remote one (client.New), with the same results and the same errors.
type Agent struct {
	Gateway  toolgatetype.Caller
	Approver Approver
	// MaxSteps bounds the loop whatever the tool answers: tool output is
	// untrusted, so it may never keep an agent running forever.
	MaxSteps int
}

// Observation is one step's result, as the agent reads it from the tool's
// output. It is data: nothing in it changes what the agent is allowed to do.
type Observation struct {
	Step         int    `json:"step"`
	Datum        string `json:"datum"`
	GoalAchieved bool   `json:"goalAchieved"`
}

// Errors that end a run early.
var (
	ErrNotCallable = errors.New("agent: the tool is not callable")
	ErrOverBudget  = errors.New("agent: the spend controls deny the call")
	ErrDeclined    = errors.New("agent: the user declined the approval")
	ErrNoProgress  = errors.New("agent: the goal was not achieved within the step limit")
)

// Run pursues goal over at most targetSteps steps, returning every
// observation and the total spent.
func (a *Agent) Run(ctx context.Context, goal string, targetSteps int) ([]Observation, string, error) {
	var seen []Observation
	total := decimal.Zero
	spent := func() string { return total.StringFixed(4) }
	for step := 1; step <= a.MaxSteps; step++ {
		q, err := a.Gateway.Quote(ctx, "goal-data")
		if err != nil {
			return seen, spent(), err
		}
		if !q.Policy.Callable {
			return seen, spent(), fmt.Errorf("%w: %v", ErrNotCallable, q.Policy.Reasons)
		}
		if !q.Controls.Approved {
			return seen, spent(), fmt.Errorf("%w: %v", ErrOverBudget, q.Controls.Violations)
		}
		// One key per logical step: should the call's outcome be lost (a
		// crash, a dropped connection), running again gets the step's
		// result rather than a second charge.
		req := toolgatetype.CallRequest{
			Tool:           "goal-data",
			QuoteID:        q.Quote.ID,
			Input:          mustJSON(map[string]any{"goal": goal, "step": step, "targetSteps": targetSteps}),
			IdempotencyKey: fmt.Sprintf("%s/step-%d", goal, step),
		}
		if q.Policy.Approval.Requirement != toolgatetype.RequirementCoveredByUserPolicy {
			digest := *q.Quote.ManifestDigest
			if !a.Approver.Approve(ctx, q.Tool, digest, q.Quote.TotalUSD) {
				return seen, spent(), ErrDeclined
			}
			req.ApprovalDigest = digest
		}
		res, err := a.Gateway.Call(ctx, req)
		if err != nil {
			return seen, spent(), err
		}
		if res.Execution.Status != toolgatetype.StatusCompleted {
			return seen, spent(), fmt.Errorf("agent: step %d failed: %s", step, res.Execution.Error.Message)
		}
		cost, err := decimal.NewFromString(res.Execution.Cost.TotalUSD)
		if err != nil {
			return seen, spent(), fmt.Errorf("agent: step %d cost: %w", step, err)
		}
		total = total.Add(cost)
		var obs Observation
		if err := json.Unmarshal(res.Execution.Output, &obs); err != nil {
			return seen, spent(), fmt.Errorf("agent: step %d output: %w", step, err)
		}
		seen = append(seen, obs)
		if obs.GoalAchieved {
			return seen, spent(), nil
		}
	}
	return seen, spent(), ErrNoProgress
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
