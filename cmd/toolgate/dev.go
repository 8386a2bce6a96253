package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/toolgate/toolgate/server"
)

// devSetup is the setup used when no config file is given: its keys, and
// the file that keeps them, if any.
type devSetup struct {
	keys server.DevKeys
	file string // "" when the keys are new on every start
}

// newDevSetup makes the development setup's keys: fresh ones, or, with
// file, the ones it keeps (server.LoadDevKeys). Errors name the file,
// never a key.
func newDevSetup(file string) (*devSetup, error) {
	keys, err := server.LoadDevKeys(file)
	if err != nil && file != "" {
		return nil, fmt.Errorf("-dev-keys %s: %w", file, err)
	}
	return &devSetup{keys: keys, file: file}, err
}

// printHelp tells a developer the keys and how to use them, on stdout:
// the keys are theirs to copy, and never go to the logs on stderr. The
// commands need only sh, curl and sed, and are the README's. Offline, the
// example is a paid call of goal-data, whose demo provider is answered in
// process and counted as verified; with live upstreams, a free call.
func (d *devSetup) printHelp(w io.Writer, baseURL string, offline bool) {
	kept := "new on every start; -dev-keys FILE keeps them"
	if d.file != "" {
		kept = "kept in " + d.file
	}
	upstreams := "live upstreams"
	if offline {
		upstreams = "recorded upstream answers (offline)"
	}
	lines := []string{
		"",
		"Development setup: in-memory store, " + upstreams + ", one API key for principal \"" + server.DevPrincipal + "\" (" + kept + "):",
		"",
		"  export TOOLGATE_KEY=" + d.keys.Principal,
		"",
	}
	if offline {
		lines = append(lines,
			"Offline, goal-data's demo provider is answered in process and counted as payment- and endpoint-verified,",
			"so its paid calls can be tried: 0.1000 USD and a 0.0100 USD fee each. Quote one, make it with the quote's",
			"id and the manifest digest you approve, then see what you spent:",
			"",
			`  QUOTE=$(curl -s -X POST `+baseURL+`/v1/tools/goal-data/quote -H "Authorization: Bearer $TOOLGATE_KEY"); echo "$QUOTE"`,
			`  QUOTE_ID=$(echo "$QUOTE" | sed 's/.*"quote":{"id":"\([^"]*\)".*/\1/'); DIGEST=$(echo "$QUOTE" | sed 's/.*"manifestDigest":"\([^"]*\)".*/\1/')`,
			`  curl -s -X POST `+baseURL+`/v1/tools/goal-data/call -H "Authorization: Bearer $TOOLGATE_KEY" -H "Content-Type: application/json" -H "Idempotency-Key: call-$QUOTE_ID" -d '{"quoteId":"'"$QUOTE_ID"'","input":{"goal":"reach the summit","step":1},"approval":{"manifestDigest":"'"$DIGEST"'"}}'; echo`,
			`  curl -s `+baseURL+`/v1/spend -H "Authorization: Bearer $TOOLGATE_KEY"; echo`,
		)
	} else {
		lines = append(lines,
			"Quote a call, then make it with the quote's id and the manifest digest you approve:",
			"",
			`  QUOTE=$(curl -s -X POST `+baseURL+`/v1/tools/earthquake-search/quote -H "Authorization: Bearer $TOOLGATE_KEY"); echo "$QUOTE"`,
			`  QUOTE_ID=$(echo "$QUOTE" | sed 's/.*"quote":{"id":"\([^"]*\)".*/\1/'); DIGEST=$(echo "$QUOTE" | sed 's/.*"manifestDigest":"\([^"]*\)".*/\1/')`,
			`  curl -s -X POST `+baseURL+`/v1/tools/earthquake-search/call -H "Authorization: Bearer $TOOLGATE_KEY" -H "Content-Type: application/json" -H "Idempotency-Key: call-$QUOTE_ID" -d '{"quoteId":"'"$QUOTE_ID"'","input":{"starttime":"2024-09-25"},"approval":{"manifestDigest":"'"$DIGEST"'"}}'; echo`,
			"",
			"Paid calls need a verified provider: -offline counts goal-data's demo provider as one.",
		)
	}
	lines = append(lines,
		"",
		"The tools: "+baseURL+"/v1/registry/tools",
		"Agents over MCP: "+baseURL+"/mcp, with the header Authorization: Bearer $TOOLGATE_KEY",
		"",
		"Approver mode: principal \""+server.DevAgent+"\" asks, you approve as approver \""+server.DevApprover+"\" ("+kept+"):",
		"",
		"  export TOOLGATE_AGENT_KEY="+d.keys.Agent,
		"  export TOOLGATE_APPROVER_KEY="+d.keys.Approver,
		"",
		"The agent's approval requests wait for you at "+baseURL+"/approvals (sign in with the approver key);",
		"the README's \"Approver mode\" section walks through them.",
		"",
	)
	fmt.Fprint(w, strings.Join(lines, "\n"))
}
