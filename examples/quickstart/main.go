// Command quickstart walks the whole toolgate flow in one process, with no
// server, no database and no network: it quotes a built-in tool, reads the
// policy and spend decision, approves the exact manifest digest, calls the
// tool, and retries the call with the same Idempotency-Key to show the
// stored result coming back instead of a second upstream call.
//
// The upstream answers come from recorded provider responses (package
// tools/recorded), served through the gateway's injectable transport.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"strings"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/storage/memory"
	"github.com/toolgate/toolgate/toolgatetype"
	_ "github.com/toolgate/toolgate/tools" // registers the five built-in tools
	"github.com/toolgate/toolgate/tools/recorded"
)

func main() {
	if err := run(context.Background(), os.Stdout, recorded.Transport()); err != nil {
		log.SetFlags(0)
		log.Fatalf("quickstart: %v", err)
	}
}

// run walks the flow on a gateway whose every upstream request goes through
// transport.
func run(ctx context.Context, w io.Writer, transport http.RoundTripper) error {
	gw, err := toolgate.New(memory.New(), &toolgate.Config{Transport: transport})
	if err != nil {
		return err
	}
	const (
		caller = "alice"
		tool   = "earthquake-search"
	)

	step(w, "1. Quote %s", tool)
	q, err := gw.Quote(ctx, caller, tool)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "   quote %s: price $%s + fee $%s = $%s, expires %s\n",
		q.Quote.ID, q.Quote.PriceUSD, q.Quote.FeeUSD, q.Quote.TotalUSD, q.Quote.ExpiresAt.Format("15:04:05 MST"))

	step(w, "2. Inspect the policy and the spend controls")
	fmt.Fprintf(w, "   callable=%t  approval=%s  risk=%s  autoCall=%t\n",
		q.Policy.Callable, q.Policy.Approval.Requirement, q.Policy.RiskLevel, q.Policy.EligibleForAutoCall)
	if len(q.Policy.Reasons) > 0 {
		fmt.Fprintf(w, "   reasons: %s\n", strings.Join(q.Policy.Reasons, "; "))
	}
	fmt.Fprintf(w, "   controls approved=%t  daily remaining $%s\n", q.Controls.Approved, q.Controls.Global.DailyRemainingUSD)
	if !q.Policy.Callable || !q.Controls.Approved {
		return fmt.Errorf("%s cannot be called now", tool)
	}

	step(w, "3. Approve the exact manifest digest")
	digest := *q.Quote.ManifestDigest
	fmt.Fprintf(w, "   the user approves %s for $%s\n", digest, q.Quote.TotalUSD)

	step(w, "4. Call")
	req := toolgatetype.CallRequest{
		Tool:           tool,
		QuoteID:        q.Quote.ID,
		Input:          json.RawMessage(`{"starttime":"2024-09-25","endtime":"2024-09-30"}`),
		ApprovalDigest: digest,
		IdempotencyKey: "quickstart-call-1",
	}
	fmt.Fprintf(w, "   input %s: magnitude 4 or more, newest first, at most 10 (the tool's defaults)\n", req.Input)
	res, err := gw.Call(ctx, caller, req)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "   execution %s: status=%s cost=$%s\n", res.Execution.ID, res.Execution.Status, res.Execution.Cost.TotalUSD)
	var out struct {
		Features []struct {
			Properties struct {
				Mag   *float64 `json:"mag"`
				Place *string  `json:"place"`
			} `json:"properties"`
		} `json:"features"`
	}
	if err := json.Unmarshal(res.Execution.Output, &out); err != nil {
		return err
	}
	for i, f := range out.Features {
		if i == 3 {
			fmt.Fprintf(w, "   ... and %d more\n", len(out.Features)-3)
			break
		}
		fmt.Fprintf(w, "   - M%s %s\n", orDash(f.Properties.Mag), strOrDash(f.Properties.Place))
	}

	step(w, "5. Retry with the same Idempotency-Key")
	again, err := gw.Call(ctx, caller, req)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "   replayed=%t, same execution %s, identical bytes=%t\n",
		again.Replayed, again.Execution.ID, string(again.Body) == string(res.Body))

	step(w, "6. Reuse the key for a different request")
	req.Input = json.RawMessage(`{"starttime":"2024-01-01"}`)
	if _, err := gw.Call(ctx, caller, req); err != nil {
		fmt.Fprintf(w, "   refused: %v\n", err)
	}
	return nil
}

func step(w io.Writer, format string, args ...any) {
	fmt.Fprintf(w, "\n"+format+"\n", args...)
}

func orDash(f *float64) string {
	if f == nil {
		return "?"
	}
	return fmt.Sprintf("%.1f", *f)
}

func strOrDash(s *string) string {
	if s == nil {
		return "(unknown place)"
	}
	return *s
}
