package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/shopspring/decimal"

	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/tools/goalprovider"
)

const goalProvider = "the goal-data provider"

const goalInputSchema = `{
  "$schema": "http://json-schema.org/draft-07/schema#",
  "type": "object",
  "required": ["goal", "step"],
  "additionalProperties": false,
  "properties": {
    "goal": {"type": "string", "minLength": 1, "maxLength": 500, "description": "The demo goal being worked towards."},
    "step": {"type": "integer", "minimum": 1, "maximum": 5, "description": "Which step of the goal this call observes."},
    "targetSteps": {"type": "integer", "minimum": 1, "maximum": 5, "default": 3, "description": "Step at which the goal counts as achieved."}
  }
}`

const goalOutputSchema = `{
  "$schema": "http://json-schema.org/draft-07/schema#",
  "type": "object",
  "required": ["goal", "step", "datum", "goalAchieved"],
  "additionalProperties": false,
  "properties": {
    "goal": {"type": "string"},
    "step": {"type": "integer"},
    "datum": {"type": "string"},
    "goalAchieved": {"type": "boolean", "description": "True once step has reached targetSteps."}
  }
}`

// goalVerifiedAt is when the goal-data endpoint was verified; fixed so that
// listings are the same on every start.
var goalVerifiedAt = time.Date(2026, time.January, 12, 9, 30, 0, 0, time.UTC)

// GoalData returns the goal-data tool: one deterministic observation per
// call from the demo goal provider, signalling when the goal's target step
// is reached. It costs 0.1000 USD per call and ships with a verified
// endpoint but a provider that has not completed payment verification, so
// it is blocked until an operator marks the payment account verified.
//
// Its origin, https://goal-data.example, is a reserved name that never
// resolves: operators self-host NewGoalProvider and point the tool at it.
func GoalData() *registry.Tool {
	verifiedAt := goalVerifiedAt
	return &registry.Tool{
		Slug:        "goal-data",
		Name:        "Goal Data",
		Description: "Returns one deterministic observation per call and signals when the requested demo goal has reached its target step",
		Category:    "developer-tools",
		Tags:        []string{"demo", "agents", "testing"},
		Provider: registry.Provider{
			Name:      "Toolgate Demo Provider",
			TrustTier: "basic",
		},
		Endpoint: registry.Endpoint{
			Origin:     "https://goal-data.example",
			Method:     http.MethodPost,
			Path:       goalprovider.Path,
			Verified:   true,
			VerifiedAt: &verifiedAt,
		},
		Version:   1,
		Immutable: true,
		Capabilities: &registry.Capabilities{
			ReadOnly:               registry.Bool(true),
			Destructive:            registry.Bool(false),
			Idempotent:             registry.Bool(true),
			OpenWorld:              registry.Bool(false),
			ReadsPrivateData:       registry.Bool(false),
			SeesUntrustedContent:   registry.Bool(true),
			WritesExternalData:     registry.Bool(false),
			SendsMessages:          registry.Bool(false),
			SpendsMoney:            registry.Bool(false),
			ExecutesCode:           registry.Bool(false),
			RequiresUserCredential: registry.Bool(false),
			DataRetention:          registry.RetentionNone,
		},
		Pricing:       registry.Pricing{Type: registry.PricingPerCall, Amount: decimal.RequireFromString("0.1000"), Currency: "USD"},
		InputSchema:   json.RawMessage(goalInputSchema),
		OutputSchema:  json.RawMessage(goalOutputSchema),
		BuildRequest:  buildGoalRequest,
		Normalize:     normalizeGoal,
		ExampleInput:  json.RawMessage(`{"goal":"find three facts about tides","step":1}`),
		ExampleOutput: json.RawMessage(`{"goal":"find three facts about tides","step":1,"datum":"verified-demo-datum-1","goalAchieved":false}`),
		UpdatedAt:     time.Date(2026, time.January, 12, 9, 15, 0, 0, time.UTC),
	}
}

func init() { registry.MustRegister(GoalData()) }

type goalInput struct {
	Goal        string       `json:"goal"`
	Step        wholeNumber  `json:"step"`
	TargetSteps *wholeNumber `json:"targetSteps"`
}

// goalRequest is the provider's request body; targetSteps is always sent,
// defaulted, so the provider's own default cannot differ from the schema's.
type goalRequest struct {
	Goal        string `json:"goal"`
	Step        int64  `json:"step"`
	TargetSteps int64  `json:"targetSteps"`
}

func buildGoalRequest(ctx context.Context, origin string, input json.RawMessage) (*http.Request, error) {
	var in goalInput
	if err := decodeInput("goal-data", input, &in); err != nil {
		return nil, err
	}
	if n := utf8.RuneCountInString(in.Goal); n < 1 || n > goalprovider.MaxGoalLength {
		return nil, fmt.Errorf("goal-data: goal must be 1 to %d characters", goalprovider.MaxGoalLength)
	}
	body := goalRequest{Goal: in.Goal, Step: int64(in.Step), TargetSteps: goalprovider.DefaultTargetSteps}
	if in.TargetSteps != nil {
		body.TargetSteps = int64(*in.TargetSteps)
	}
	if !inSteps(body.Step) || !inSteps(body.TargetSteps) {
		return nil, fmt.Errorf("goal-data: step and targetSteps must be %d to %d", goalprovider.MinSteps, goalprovider.MaxSteps)
	}
	return newJSONRequest(ctx, origin, goalprovider.Path, body)
}

func inSteps(n int64) bool { return n >= goalprovider.MinSteps && n <= goalprovider.MaxSteps }

// GoalObservation is the normalized output of goal-data.
type GoalObservation struct {
	Goal         string `json:"goal"`
	Step         int    `json:"step"`
	Datum        string `json:"datum"`
	GoalAchieved bool   `json:"goalAchieved"`
}

type goalWire struct {
	Goal         *string      `json:"goal"`
	Step         *wholeNumber `json:"step"`
	Datum        *string      `json:"datum"`
	GoalAchieved *bool        `json:"goalAchieved"`
}

// goalError is the provider's error body, {"error": {"code", "message"}}.
type goalError struct {
	Error struct {
		Message string `json:"message"`
	} `json:"error"`
}

func normalizeGoal(resp registry.UpstreamResponse) (any, error) {
	if !success(resp.StatusCode) {
		return nil, upstreamFailed(goalProvider, resp.StatusCode,
			jsonReason(resp.Body, func(e goalError) string { return e.Error.Message }))
	}
	var raw goalWire
	if err := decodeBody(goalProvider, resp.Body, &raw); err != nil {
		return nil, err
	}
	if raw.Goal == nil || raw.Step == nil || raw.Datum == nil || raw.GoalAchieved == nil {
		return nil, invalid(goalProvider, "the observation lacks goal, step, datum or goalAchieved")
	}
	return GoalObservation{Goal: *raw.Goal, Step: int(*raw.Step), Datum: *raw.Datum, GoalAchieved: *raw.GoalAchieved}, nil
}
