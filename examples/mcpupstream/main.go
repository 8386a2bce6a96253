// Command mcpupstream gates an MCP server you already run: it starts a
// real MCP server (written here with the go-sdk, served over streamable
// HTTP on a local port), puts its tool behind a toolgate gateway with a
// price and a person's approval, and walks one agent's use of it: the
// quote, the call refused until a person approves, the approved call, and
// a retry that replays the one result instead of opening a second ticket.
//
//	go run ./examples/mcpupstream
//
// The standalone server does the same from its config ("mcpServers"); see
// the README's "Gating your MCP servers".
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/shopspring/decimal"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/mcpupstream"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/storage/memory"
	"github.com/toolgate/toolgate/toolgatetype"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		log.SetFlags(0)
		log.Fatalf("mcpupstream: %v", err)
	}
}

// ticketServer is the MCP server people already run: it opens tickets, and
// counts how many it opened.
func ticketServer(opened *atomic.Int64) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "tickets", Version: "1"}, nil)
	type in struct {
		Title string `json:"title" jsonschema:"what the ticket is about"`
	}
	type out struct {
		ID string `json:"id"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "open_ticket", Title: "Open a ticket", Description: "Opens a support ticket."},
		func(_ context.Context, _ *mcp.CallToolRequest, args in) (*mcp.CallToolResult, out, error) {
			n := opened.Add(1)
			return nil, out{ID: fmt.Sprintf("T-%d", 1000+n)}, nil
		})
	return s
}

func run(ctx context.Context, w io.Writer) error {
	// The MCP server, over streamable HTTP on a local port.
	var opened atomic.Int64
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	tickets := ticketServer(&opened)
	mcpHTTP := &http.Server{Handler: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return tickets }, nil), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = mcpHTTP.Serve(ln) }()
	defer mcpHTTP.Close()

	// The gateway: the agent's calls need a person's approval (pat's).
	reg := registry.New()
	gw, err := toolgate.New(memory.New(), &toolgate.Config{
		Registry: reg,
		Approvers: toolgatetype.StaticApprovers{
			Modes:     map[string]toolgatetype.ApprovalMode{"agent": toolgatetype.ApprovalModeApprover},
			Approvers: map[string][]string{"pat": {"agent"}},
		},
	})
	if err != nil {
		return err
	}
	// The operator's word on the server's tools: a price, what they do,
	// and trust in the provider. Nothing of it comes from the server.
	upstreams, err := mcpupstream.Start(ctx, reg, []mcpupstream.Server{{
		ID:       "tickets",
		URL:      "http://" + ln.Addr().String() + "/mcp",
		Provider: mcpupstream.Provider{Name: "Acme Support", TrustTier: "basic"},
		Defaults: mcpupstream.ToolConfig{
			Pricing:      &registry.Pricing{Type: registry.PricingPerCall, Amount: decimal.RequireFromString("0.0500")},
			Capabilities: &registry.Capabilities{ReadOnly: registry.Bool(false), WritesExternalData: registry.Bool(true)},
			Trust:        registry.Trust{PaymentVerified: registry.Bool(true), EndpointVerified: registry.Bool(true)},
		},
	}}, nil)
	if err != nil {
		return err
	}
	defer upstreams.Close()
	if up := upstreams.Health()["tickets"]; up != "up" {
		return fmt.Errorf("the tickets server is %s: %+v", up, upstreams.Status())
	}
	const tool = "tickets.open-ticket"

	e, err := gw.Entry(ctx, tool, toolgatetype.EntryOptions{})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "1. The registry serves %s (%q from MCP server %s, tool %s): $%s a call, risk %s, approval %s\n",
		e.Slug, e.Name, e.Upstream.Server, e.Upstream.Name, e.Pricing.Amount, e.Risk.Level, e.Policy.Approval.Requirement)

	q, err := gw.Quote(ctx, "agent", tool)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "2. The agent's quote: $%s ($%s and a $%s fee), version %s\n", q.Quote.TotalUSD, q.Quote.PriceUSD, q.Quote.FeeUSD, *q.Quote.ManifestDigest)

	input := json.RawMessage(`{"title":"Printer on fire"}`)
	req := toolgatetype.CallRequest{Tool: tool, QuoteID: q.Quote.ID, Input: input, IdempotencyKey: "agent-ticket-1", ApprovalDigest: *q.Quote.ManifestDigest}
	_, err = gw.Call(ctx, "agent", req)
	var refusal *toolgatetype.Error
	if !errors.As(err, &refusal) {
		return fmt.Errorf("the unapproved call was not refused: %v", err)
	}
	fmt.Fprintf(w, "3. Called with the digest it copied: refused, %s; tickets opened: %d\n", refusal.Code, opened.Load())

	ar, err := gw.RequestApproval(ctx, "agent", toolgatetype.ApprovalInput{QuoteID: q.Quote.ID, Input: input})
	if err != nil {
		return err
	}
	if _, err := gw.DecideApproval(ctx, "pat", ar.ID, toolgatetype.Decision{Approve: true}); err != nil {
		return err
	}
	fmt.Fprintf(w, "4. The agent asks; pat approves request %s ($%s, input sha256 %.12s...)\n", ar.ID, ar.TotalUSD, ar.InputSHA256)

	req.ApprovalGrant = ar.ID
	res, err := gw.Call(ctx, "agent", req)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "5. Called with the grant: %s, output %s, charged $%s; tickets opened: %d\n",
		res.Execution.Status, res.Execution.Output, res.Execution.Cost.TotalUSD, opened.Load())

	again, err := gw.Call(ctx, "agent", req)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "6. The agent retries with the same Idempotency-Key: replayed=%t, the same execution=%t; tickets opened: %d\n",
		again.Replayed, again.Execution.ID == res.Execution.ID, opened.Load())

	spend, err := gw.Spend(ctx, "agent", toolgatetype.SpendFilter{})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "7. The agent's spend: $%s\n", spend.TotalUSD)
	return nil
}
