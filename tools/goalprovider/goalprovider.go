// Package goalprovider is the demo provider behind the goal-data tool, as an
// http.Handler an operator can mount on any server and point the tool at.
//
// It lives in its own package, not in package tools, so that both tools
// (which re-exports it as tools.NewGoalProvider) and tools/recorded (which
// serves it in-process for offline runs) can import it without a cycle.
package goalprovider

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"unicode/utf8"
)

// Path is the only route the provider answers.
const Path = "/v1/goal-data"

// Bounds of the provider's input, the same as the goal-data tool's input schema.
const (
	DefaultTargetSteps = 3
	MinSteps           = 1
	MaxSteps           = 5
	MaxGoalLength      = 500 // in characters (Unicode code points), as JSON Schema counts them
)

// maxBody caps what the provider reads: a valid request is well under 4 KiB
// even with a 500-character goal of 4-byte characters.
const maxBody = 64 << 10

// Request is the body the provider accepts.
type Request struct {
	Goal        string `json:"goal"`
	Step        int    `json:"step"`
	TargetSteps int    `json:"targetSteps"`
}

// Observation is the provider's answer: one deterministic datum per step.
type Observation struct {
	Goal         string `json:"goal"`
	Step         int    `json:"step"`
	Datum        string `json:"datum"`
	GoalAchieved bool   `json:"goalAchieved"`
}

// New returns the demo goal provider. It answers POST /v1/goal-data with
// {goal, step, targetSteps (default 3)} by returning
// {goal, step, datum: "verified-demo-datum-{step}", goalAchieved: step >= targetSteps}.
// A body that is not valid JSON, has unknown fields or values out of bounds
// gets 400, another method 405 and another path 404, each with a JSON body
// {"error": {"code", "message"}}. It keeps no state, so it is safe for
// concurrent use and every answer is reproducible.
func New() http.Handler { return handler{} }

type handler struct{}

func (handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != Path {
		writeError(w, http.StatusNotFound, "not_found", "no such route; the goal provider answers POST "+Path)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", "use POST")
		return
	}
	req, err := decode(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, observe(req))
}

// observe computes the observation for a validated request, whose
// TargetSteps decode has already defaulted.
func observe(req Request) Observation {
	return Observation{
		Goal:         req.Goal,
		Step:         req.Step,
		Datum:        "verified-demo-datum-" + strconv.Itoa(req.Step),
		GoalAchieved: req.Step >= req.TargetSteps,
	}
}

// wireRequest tells absent fields from zero ones, and keeps numbers raw so
// 2.0 counts as the integer 2, as it does in JSON Schema. (json.Number
// would not do: it also accepts a string such as "2".)
type wireRequest struct {
	Goal        *string          `json:"goal"`
	Step        *json.RawMessage `json:"step"`
	TargetSteps *json.RawMessage `json:"targetSteps"`
}

func decode(body io.Reader) (Request, error) {
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	var in wireRequest
	if err := dec.Decode(&in); err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return Request{}, fmt.Errorf("body is larger than %d bytes", maxBody)
		}
		return Request{}, fmt.Errorf("body is not a valid request: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Request{}, errors.New("body has data after the JSON object")
	}
	if in.Goal == nil {
		return Request{}, errors.New("goal is required")
	}
	if n := utf8.RuneCountInString(*in.Goal); n < 1 || n > MaxGoalLength {
		return Request{}, fmt.Errorf("goal must be 1 to %d characters", MaxGoalLength)
	}
	if in.Step == nil {
		return Request{}, errors.New("step is required")
	}
	step, err := bounded("step", *in.Step)
	if err != nil {
		return Request{}, err
	}
	target := DefaultTargetSteps
	if in.TargetSteps != nil {
		if target, err = bounded("targetSteps", *in.TargetSteps); err != nil {
			return Request{}, err
		}
	}
	return Request{Goal: *in.Goal, Step: step, TargetSteps: target}, nil
}

func bounded(name string, raw json.RawMessage) (int, error) {
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || f != math.Trunc(f) || f < MinSteps || f > MaxSteps {
		return 0, fmt.Errorf("%s must be an integer from %d to %d", name, MinSteps, MaxSteps)
	}
	return int(f), nil
}

type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func writeError(w http.ResponseWriter, status int, code, message string) {
	writeJSON(w, status, errorBody{Error: errorDetail{Code: code, Message: message}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		// Only plain structs of strings, ints and bools reach here.
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
