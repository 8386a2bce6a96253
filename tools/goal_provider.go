package tools

import (
	"net/http"

	"github.com/toolgate/toolgate/tools/goalprovider"
)

// NewGoalProvider returns the demo goal provider behind the goal-data tool,
// for operators to self-host: mount it on any server and point goal-data at
// that server with Registry.SetOrigin. It answers POST /v1/goal-data with
// {goal, step, targetSteps (default 3)} by returning
// {goal, step, datum: "verified-demo-datum-{step}", goalAchieved: step >= targetSteps};
// invalid JSON or fields get 400 with a JSON error body, other methods 405.
// See package goalprovider, where it lives so that tools/recorded can serve
// it too without importing this package.
func NewGoalProvider() http.Handler { return goalprovider.New() }
