// Command agentloop is an agent-runtime style loop over the gateway: it
// quotes goal-data, checks policy.approval and controls.approved, asks a
// stand-in user to approve the exact digest and total when the policy asks
// for it, calls, and stops when goal-data reports goalAchieved.
//
// goal-data is a paid tool whose provider has not completed payment
// verification, so it ships blocked; this program plays the operator and
// marks the payment account verified with a trust override. The demo goal
// provider runs in process, so no network is needed.
package main

import (
	"context"
	"fmt"
	"log"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/storage/memory"
	"github.com/toolgate/toolgate/tools"
	"github.com/toolgate/toolgate/tools/recorded"
)

// consoleUser approves everything and says so; a real runtime would ask.
type consoleUser struct{}

func (consoleUser) Approve(_ context.Context, tool toolgate.ToolRef, digest, total string) bool {
	fmt.Printf("   user: approve %s (%s) for $%s? yes\n", tool.Slug, digest, total)
	return true
}

func main() {
	ctx := context.Background()
	reg := registry.New()
	if err := tools.RegisterAll(reg); err != nil {
		log.Fatal(err)
	}
	if err := reg.SetTrust("goal-data", registry.Trust{PaymentVerified: registry.Bool(true)}); err != nil {
		log.Fatal(err)
	}
	gw, err := toolgate.New(memory.New(), &toolgate.Config{Registry: reg, Transport: recorded.Transport()})
	if err != nil {
		log.Fatal(err)
	}
	agent := &Agent{Gateway: gw, Principal: "agent-7", Approver: consoleUser{}, MaxSteps: 5}
	observations, spent, err := agent.Run(ctx, "find three verified data points", 3)
	for _, o := range observations {
		fmt.Printf("   step %d: %s (goal achieved: %t)\n", o.Step, o.Datum, o.GoalAchieved)
	}
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("done in %d steps, spent $%s\n", len(observations), spent)
}
