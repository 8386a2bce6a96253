package toolgatetest_test

import (
	"fmt"

	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"
)

// exampleT stands in for the *testing.T a real test has: it prints a
// failure and stops the example.
type exampleT struct{}

func (exampleT) Helper() {}
func (exampleT) Fatalf(format string, args ...any) {
	fmt.Printf("FAIL: "+format+"\n", args...)
	panic("the example failed")
}

// A unit test of code that calls tools through the gateway, in a few
// lines: a gateway over memory, with its own registry, a fake clock and a
// fake upstream that answers in process. The echo tool is there for tests
// that need a tool of their own.
func Example() {
	t := exampleT{} // in a real test, the *testing.T
	gw := toolgatetest.New(t, nil)

	res, err := gw.CallApproved(t, "alice", "echo", `{"v":"hello"}`)
	out := toolgatetest.RequireCompleted(t, res, err, "0.0000")
	fmt.Println(string(out))

	// A refused call reaches no provider and leaves nothing behind.
	_, err = gw.CallApproved(t, "alice", "echo", `{"v":""}`)
	refused := toolgatetest.RequireCode(t, err, toolgatetype.CodeInputInvalid)
	fmt.Println(refused.Details[0].Path)

	gw.Upstream.RequireCalls(t, 1)
	gw.RequireSpent(t, "alice", "0.0000")
	// Output:
	// {"value":"hello"}
	// input.v
}

// A paid tool of one's own, a daily budget, and the clock moved to the
// next day: the budget holds within the day and starts over the next.
func Example_spendControls() {
	t := exampleT{}
	paid := toolgatetest.Priced(toolgatetest.EchoTool(), "0.1000") // verified, low risk: no approval asked
	budget := toolgatetype.StaticSpendControls{"alice": {DailyLimitUSD: decimalPtr("0.2500")}}
	gw := toolgatetest.New(t, &toolgatetest.Options{
		Tools:  []*registry.Tool{paid},
		Config: &toolgate.Config{SpendControls: budget},
	})

	for i := 0; i < 2; i++ {
		res, err := gw.CallApproved(t, "alice", "echo", `{"v":"paid"}`)
		toolgatetest.RequireCompleted(t, res, err, "0.1100")
	}
	_, err := gw.CallApproved(t, "alice", "echo", `{"v":"paid"}`)
	fmt.Println(toolgatetest.RequireCode(t, err, toolgatetype.CodeSpendLimitExceeded).Violations)

	gw.Clock.Advance(24 * time.Hour)
	res, err := gw.CallApproved(t, "alice", "echo", `{"v":"paid"}`)
	toolgatetest.RequireCompleted(t, res, err, "0.1100")
	gw.RequireSpent(t, "alice", "0.3300")
	gw.Upstream.RequireCalls(t, 3)
	// Output:
	// [Call would exceed global daily limit of $0.2500]
}
