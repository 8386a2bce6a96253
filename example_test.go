package toolgate_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/httpapi"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/storage/memory"
	"github.com/toolgate/toolgate/toolgatetype"
	"github.com/toolgate/toolgate/tools"
	"github.com/toolgate/toolgate/tools/recorded"
)

// newExampleGateway is a gateway with its own registry of the built-in
// tools, answering from recorded provider responses.
func newExampleGateway() *toolgate.Gateway {
	reg := registry.New()
	if err := tools.RegisterAll(reg); err != nil {
		panic(err)
	}
	gw, err := toolgate.New(memory.New(), &toolgate.Config{Registry: reg, Transport: recorded.Transport()})
	if err != nil {
		panic(err)
	}
	return gw
}

func ExampleGateway_Quote() {
	gw := newExampleGateway()
	q, err := gw.Quote(context.Background(), "alice", "goal-data")
	if err != nil {
		panic(err)
	}
	fmt.Println("price", q.Quote.PriceUSD, "fee", q.Quote.FeeUSD, "total", q.Quote.TotalUSD)
	fmt.Println("callable:", q.Policy.Callable, "approval:", q.Policy.Approval.Requirement)
	fmt.Println("why:", q.Policy.Reasons)
	fmt.Println("controls approved:", q.Controls.Approved)
	// Output:
	// price 0.1000 fee 0.0100 total 0.1100
	// callable: false approval: blocked
	// why: [paid provider has not completed payment verification]
	// controls approved: true
}

func ExampleGateway_Call() {
	ctx := context.Background()
	gw := newExampleGateway()
	q, err := gw.Quote(ctx, "alice", "exchange-rates")
	if err != nil {
		panic(err)
	}
	req := toolgatetype.CallRequest{
		Tool:           "exchange-rates",
		QuoteID:        q.Quote.ID,
		Input:          json.RawMessage(`{"base":"USD","quotes":"EUR,GBP"}`),
		ApprovalDigest: *q.Quote.ManifestDigest, // the user approved this exact version
		IdempotencyKey: "rates-2026-03-25",
	}
	res, err := gw.Call(ctx, "alice", req)
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Execution.Status, string(res.Execution.Output))

	again, _ := gw.Call(ctx, "alice", req)
	fmt.Println("replayed:", again.Replayed, "same bytes:", string(again.Body) == string(res.Body))
	// Output:
	// completed [{"date":"2026-03-25","base":"USD","quote":"EUR","rate":0.9251},{"date":"2026-03-25","base":"USD","quote":"GBP","rate":0.7734}]
	// replayed: true same bytes: true
}

func ExampleError() {
	gw := newExampleGateway()
	_, err := gw.Call(context.Background(), "alice", toolgatetype.CallRequest{Tool: "exchange-rates"})
	var te *toolgatetype.Error
	if errors.As(err, &te) {
		fmt.Println(te.Code, httpapi.StatusOf(te.Code))
	}
	// Output:
	// idempotency_key_missing 400
}
