// Command approvals walks approver mode, where a person approves an
// agent's calls, offline, in one process, over the real HTTP API: an agent
// quotes a tool and finds that the digest it can copy from its quote
// approves nothing; it asks for approval; a person (simulated here) reads
// the request and approves it with an approver key; the agent's call runs
// with the grant; and the same grant, tried again on a new quote, is
// refused.
//
// A person would normally decide on the approval page, at the request's
// approveUrl; the simulated one uses the approvers' API routes instead.
// The upstream answers come from recorded provider responses.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/apikey"
	"github.com/toolgate/toolgate/storage/memory"
	"github.com/toolgate/toolgate/toolgatehttp"
	"github.com/toolgate/toolgate/toolgatetype"
	_ "github.com/toolgate/toolgate/tools" // registers the five built-in tools
	"github.com/toolgate/toolgate/tools/recorded"
)

// The parties: an agent whose calls need a person's approval, and pat, the
// person who approves for it.
const (
	agentKey    = "tg_example_agent"
	approverKey = "tg_example_pat_approver"
	tool        = "earthquake-search"
)

func main() {
	if err := run(context.Background(), os.Stdout, recorded.Transport()); err != nil {
		log.SetFlags(0)
		log.Fatalf("approvals: %v", err)
	}
}

// run serves a gateway on a local port, with every upstream request going
// through transport, and walks the flow against it.
func run(ctx context.Context, w io.Writer, transport http.RoundTripper) error {
	gw, err := toolgate.New(memory.New(), &toolgate.Config{
		Transport: transport,
		Approvers: toolgatetype.StaticApprovers{
			Modes:     map[string]toolgatetype.ApprovalMode{"agent": toolgatetype.ApprovalModeApprover},
			Approvers: map[string][]string{"pat": {"agent"}},
		},
	})
	if err != nil {
		return err
	}
	keys := apikey.NewKeyStore()
	if err := keys.AddKey("agent", agentKey); err != nil {
		return err
	}
	if err := keys.AddApproverKey("pat", approverKey); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: toolgatehttp.NewHandler(gw, &toolgatehttp.Options{Authenticator: keys}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	base := "http://" + ln.Addr().String()
	agent := party{base: base, key: agentKey}
	pat := party{base: base, key: approverKey}

	step(w, "1. The agent quotes %s", tool)
	var q struct {
		Quote struct {
			ID             string `json:"id"`
			TotalUSD       string `json:"totalUsd"`
			ManifestDigest string `json:"manifestDigest"`
		} `json:"quote"`
	}
	if _, err := agent.send(ctx, http.MethodPost, "/v1/tools/"+tool+"/quote", nil, nil, &q); err != nil {
		return err
	}
	fmt.Fprintf(w, "   quote %s for $%s, digest %s\n", q.Quote.ID, q.Quote.TotalUSD, q.Quote.ManifestDigest)

	input := json.RawMessage(`{"starttime":"2024-09-25","endtime":"2024-09-30","limit":3}`)
	call := func(key, quoteID, grant string) (int, map[string]any, error) {
		approval := map[string]string{"manifestDigest": q.Quote.ManifestDigest}
		if grant != "" {
			approval["grantId"] = grant
		}
		var out map[string]any
		status, err := agent.send(ctx, http.MethodPost, "/v1/tools/"+tool+"/call",
			map[string]any{"quoteId": quoteID, "input": input, "approval": approval},
			map[string]string{"Idempotency-Key": key}, &out)
		return status, out, err
	}

	step(w, "2. The agent copies the digest into its call: that approves nothing here")
	status, out, err := call("approvals-example-1", q.Quote.ID, "")
	if err != nil {
		return err
	}
	e := errorOf(out)
	fmt.Fprintf(w, "   %d %s; ask at %s\n", status, e["code"], e["approvalRequestsUrl"])

	step(w, "3. The agent asks for approval of this exact call")
	var req approvalRequest
	if _, err := agent.send(ctx, http.MethodPost, "/v1/approval-requests",
		map[string]any{"quoteId": q.Quote.ID, "input": input}, nil, &req); err != nil {
		return err
	}
	fmt.Fprintf(w, "   request %s is %s; a person decides at %s\n", req.ID, req.Status, req.ApproveURL)

	step(w, "4. The person reads what is waiting, and approves")
	var waiting struct {
		ApprovalRequests []approvalRequest `json:"approvalRequests"`
	}
	if _, err := pat.send(ctx, http.MethodGet, "/v1/approval-requests", nil, nil, &waiting); err != nil {
		return err
	}
	for _, r := range waiting.ApprovalRequests {
		fmt.Fprintf(w, "   waiting: %s wants %s (%s) for $%s with input %s\n", r.Principal, r.Tool.Name, r.Tool.Slug, r.TotalUSD, r.Input)
	}
	var decided approvalRequest
	if _, err := pat.send(ctx, http.MethodPost, "/v1/approval-requests/"+req.ID+"/approve", nil, nil, &decided); err != nil {
		return err
	}
	fmt.Fprintf(w, "   request %s is %s by %s\n", decided.ID, decided.Status, decided.DecidedBy)

	step(w, "5. The agent sees the approval and calls with the grant")
	var seen approvalRequest
	if _, err := agent.send(ctx, http.MethodGet, "/v1/approval-requests/"+req.ID, nil, nil, &seen); err != nil {
		return err
	}
	fmt.Fprintf(w, "   request %s is %s\n", seen.ID, seen.Status)
	status, out, err = call("approvals-example-1", q.Quote.ID, req.ID)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "   %d: execution %s status=%s\n", status, out["id"], out["status"])

	step(w, "6. The agent tries the same grant on a new quote")
	var q2 struct {
		Quote struct {
			ID string `json:"id"`
		} `json:"quote"`
	}
	if _, err := agent.send(ctx, http.MethodPost, "/v1/tools/"+tool+"/quote", nil, nil, &q2); err != nil {
		return err
	}
	status, out, err = call("approvals-example-2", q2.Quote.ID, req.ID)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "   %d %s: a grant approves one call only\n", status, errorOf(out)["code"])
	return nil
}

// approvalRequest is what the example reads of an approval request.
type approvalRequest struct {
	ID         string               `json:"id"`
	Status     string               `json:"status"`
	Principal  string               `json:"principal"`
	Tool       toolgatetype.ToolRef `json:"tool"`
	TotalUSD   string               `json:"totalUsd"`
	Input      json.RawMessage      `json:"input"`
	DecidedBy  string               `json:"decidedBy"`
	ApproveURL string               `json:"approveUrl"`
}

// party is someone with a key: the agent's API key or the person's
// approver key.
type party struct {
	base, key string
}

// send makes one request and decodes the answer into out, whatever its
// status: the example prints refusals as they come.
func (p party) send(ctx context.Context, method, path string, body any, header map[string]string, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, p.base+path, rd)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+p.key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, err
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return resp.StatusCode, fmt.Errorf("%s %s answered %d: %s", method, path, resp.StatusCode, raw)
	}
	return resp.StatusCode, nil
}

// errorOf is the error object of an error body.
func errorOf(body map[string]any) map[string]any {
	e, _ := body["error"].(map[string]any)
	return e
}

func step(w io.Writer, format string, args ...any) {
	fmt.Fprintf(w, "\n"+format+"\n", args...)
}
