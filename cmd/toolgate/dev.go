package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"strings"

	"github.com/toolgate/toolgate/toolgatetype"
)

// The development setup's identities: devPrincipal approves its own calls;
// devAgent is an agent in approver mode, whose calls devApprover approves.
const (
	devPrincipal = "dev"
	devAgent     = "agent"
	devApprover  = "you"
)

// devConfig is the setup used when no config file is given: the default
// address, the memory store, one fresh key for devPrincipal (returned), and
// fresh keys for devAgent and devApprover, to try approver mode.
func devConfig() (*Config, string, error) {
	var keys [3]string
	for i, prefix := range []string{"tg_dev_", "tg_dev_agent_", "tg_dev_approver_"} {
		b := make([]byte, 16)
		if _, err := rand.Read(b); err != nil {
			return nil, "", fmt.Errorf("generate a development key: %w", err)
		}
		keys[i] = prefix + hex.EncodeToString(b)
	}
	return &Config{
		Listen:  defaultListen,
		Storage: storageMemory,
		Principals: []Principal{
			{ID: devPrincipal, APIKeys: []string{keys[0]}},
			{ID: devAgent, APIKeys: []string{keys[1]}, ApprovalMode: toolgatetype.ApprovalModeApprover},
		},
		Approvers: []Approver{{ID: devApprover, Keys: []string{keys[2]}, Principals: []string{devAgent}}},
	}, keys[0], nil
}

// printDevHelp tells a developer the key and how to use it, on stdout:
// the key is theirs to copy, and never goes to the logs on stderr. The
// commands need only sh, curl and sed, and are the README's.
func printDevHelp(w io.Writer, cfg *Config, baseURL, key string, offline bool) {
	upstreams := "live upstreams"
	if offline {
		upstreams = "recorded upstream answers (offline)"
	}
	lines := []string{
		"",
		"Development setup: in-memory store, " + upstreams + ", one API key for principal \"" + devPrincipal + "\" (new on every start):",
		"",
		"  export TOOLGATE_KEY=" + key,
		"",
		"Quote a call, then make it with the quote's id and the manifest digest you approve:",
		"",
		`  QUOTE=$(curl -s -X POST ` + baseURL + `/v1/tools/earthquake-search/quote -H "Authorization: Bearer $TOOLGATE_KEY"); echo "$QUOTE"`,
		`  QUOTE_ID=$(echo "$QUOTE" | sed 's/.*"quote":{"id":"\([^"]*\)".*/\1/'); DIGEST=$(echo "$QUOTE" | sed 's/.*"manifestDigest":"\([^"]*\)".*/\1/')`,
		`  curl -s -X POST ` + baseURL + `/v1/tools/earthquake-search/call -H "Authorization: Bearer $TOOLGATE_KEY" -H "Content-Type: application/json" -H "Idempotency-Key: call-$QUOTE_ID" -d '{"quoteId":"'"$QUOTE_ID"'","input":{"starttime":"2024-09-25"},"approval":{"manifestDigest":"'"$DIGEST"'"}}'`,
		"",
		"The tools: " + baseURL + "/v1/registry/tools",
		"Agents over MCP: " + baseURL + "/mcp, with the header Authorization: Bearer $TOOLGATE_KEY",
		"",
	}
	if len(cfg.Principals) > 1 && len(cfg.Approvers) > 0 {
		lines = append(lines,
			"Approver mode: principal \""+devAgent+"\" asks, you approve as approver \""+devApprover+"\" (keys new on every start):",
			"",
			"  export TOOLGATE_AGENT_KEY="+cfg.Principals[1].APIKeys[0],
			"  export TOOLGATE_APPROVER_KEY="+cfg.Approvers[0].Keys[0],
			"",
			"The agent's approval requests wait for you at "+baseURL+"/approvals (sign in with the approver key);",
			"the README's \"Approver mode\" section walks through them.",
			"",
		)
	}
	fmt.Fprint(w, strings.Join(lines, "\n"))
}
