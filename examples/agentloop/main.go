// Command agentloop is an agent-runtime style loop over the gateway: it
// quotes goal-data, checks policy.approval and controls.approved, asks a
// stand-in user to approve the exact digest and total when the policy asks
// for it, calls, and stops when goal-data reports goalAchieved.
//
// The agent knows the gateway only as a toolgatetype.Caller. It runs twice:
// on the gateway embedded in this process, then on the same gateway served
// over HTTP, as a shared gateway would be, through package client. Both
// runs go the same way.
//
// goal-data is a paid tool whose provider has not completed payment
// verification, so it ships blocked; this program plays the operator and
// marks the payment account verified with a trust override. The demo goal
// provider runs in process, so no network is needed.
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/apikey"
	"github.com/toolgate/toolgate/client"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/storage/memory"
	"github.com/toolgate/toolgate/toolgatehttp"
	"github.com/toolgate/toolgate/toolgatetype"
	"github.com/toolgate/toolgate/tools"
	"github.com/toolgate/toolgate/tools/recorded"
)

// consoleUser approves everything and says so; a real runtime would ask.
type consoleUser struct{ out io.Writer }

func (u consoleUser) Approve(_ context.Context, tool toolgatetype.ToolRef, digest, total string) bool {
	fmt.Fprintf(u.out, "   user: approve %s (%s) for $%s? yes\n", tool.Slug, digest, total)
	return true
}

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, out io.Writer) error {
	reg := registry.New()
	if err := tools.RegisterAll(reg); err != nil {
		return err
	}
	if err := reg.SetTrust("goal-data", registry.Trust{PaymentVerified: registry.Bool(true)}); err != nil {
		return err
	}
	gw, err := toolgate.New(memory.New(), &toolgate.Config{Registry: reg, Transport: recorded.Transport()})
	if err != nil {
		return err
	}

	fmt.Fprintln(out, "embedded, as agent-7:")
	if err := runAgent(ctx, out, gw.For("agent-7")); err != nil {
		return err
	}

	// The same gateway as a service: its HTTP API on a local port, with an
	// API key for agent-8, reached through the client.
	const key = "tg_example_agent_8"
	keys := apikey.NewKeyStore()
	if err := keys.AddKey("agent-8", key); err != nil {
		return err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: toolgatehttp.NewHandler(gw, &toolgatehttp.Options{Authenticator: keys})}
	go srv.Serve(l)
	defer srv.Close()
	remote, err := client.New("http://"+l.Addr().String(), key, nil)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "over HTTP, as agent-8:")
	return runAgent(ctx, out, remote)
}

func runAgent(ctx context.Context, out io.Writer, gateway toolgatetype.Caller) error {
	agent := &Agent{Gateway: gateway, Approver: consoleUser{out}, MaxSteps: 5}
	observations, spent, err := agent.Run(ctx, "find three verified data points", 3)
	for _, o := range observations {
		fmt.Fprintf(out, "   step %d: %s (goal achieved: %t)\n", o.Step, o.Datum, o.GoalAchieved)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "done in %d steps, spent $%s\n", len(observations), spent)
	return nil
}
