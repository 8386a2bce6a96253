package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
)

// devPrincipal is the one caller of the development setup.
const devPrincipal = "dev"

// devConfig is the setup used when no config file is given: the default
// address, the memory store and one fresh key for devPrincipal.
func devConfig() (*Config, string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return nil, "", fmt.Errorf("generate a development key: %w", err)
	}
	key := "tg_dev_" + hex.EncodeToString(b)
	return &Config{
		Listen:     defaultListen,
		Storage:    storageMemory,
		Principals: []Principal{{ID: devPrincipal, APIKeys: []string{key}}},
	}, key, nil
}

// printDevHelp tells a developer the key and how to use it, on stdout:
// the key is theirs to copy, and never goes to the logs on stderr. The
// commands need only sh, curl and sed, and are the README's.
func printDevHelp(w io.Writer, baseURL, key string, offline bool) {
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
	fmt.Fprint(w, strings.Join(lines, "\n"))
}
