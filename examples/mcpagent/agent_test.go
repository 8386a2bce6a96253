package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/apikey"
	"github.com/toolgate/toolgate/mcpserver"
	"github.com/toolgate/toolgate/toolgatetest"
)

// refuses is a person who says no.
type refuses struct{}

func (refuses) Approve(string) (bool, string) { return false, "" }

var rates = map[string]any{"base": "USD", "quotes": "EUR,GBP,JPY"}

func TestAgentCallsAToolItsUserApproved(t *testing.T) {
	// The gateway's transport is an in-process fake answering like the
	// providers, so nothing goes over the network, and it counts the call.
	providers := toolgatetest.NewUpstream()
	var out bytes.Buffer
	ctx := context.Background()
	cs, err := inProcess(ctx, providers, agreeable{}, &out)
	require.NoError(t, err)
	defer cs.Close()
	require.NoError(t, Run(ctx, cs, "exchange-rates", rates, &out))

	text := out.String()
	assert.Contains(t, text, "- exchange-rates (Live Exchange Rates): $0.0000 a call, approval explicit_unverified")
	assert.NotContains(t, text, "goal-data", "a blocked tool is not offered")
	assert.Regexp(t, `the gateway asks: "Approve Live Exchange Rates for \$0\.0000\? version sha256:[0-9a-f]{64}" -> approve=true remember=once`, text)
	assert.Regexp(t, `Execution [0-9a-f-]{36} cost \$0\.0000`, text)
	for _, quote := range []string{`"quote": "EUR"`, `"quote": "GBP"`, `"quote": "JPY"`} {
		assert.Contains(t, text, quote)
	}
	providers.RequireCalls(t, 1)
}

func TestAgentReportsARefusedCall(t *testing.T) {
	providers := toolgatetest.NewUpstream()
	var out bytes.Buffer
	ctx := context.Background()
	cs, err := inProcess(ctx, providers, refuses{}, &out)
	require.NoError(t, err)
	defer cs.Close()
	require.NoError(t, Run(ctx, cs, "exchange-rates", rates, &out))
	assert.Contains(t, out.String(), "3. The call did not run:\n   approval_required: the user declined the call of exchange-rates.")
	providers.RequireCalls(t, 0)
}

func TestAgentOverHTTP(t *testing.T) {
	gw := toolgatetest.New(t, nil)
	keys := apikey.NewKeyStore()
	require.NoError(t, keys.AddKey("agent-7", "tg_test_agent_key"))
	h, err := mcpserver.NewHandler(gw.Gateway, &mcpserver.Options{Authenticator: keys})
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	defer h.Close()

	var out bytes.Buffer
	ctx := context.Background()
	cs, err := overHTTP(ctx, srv.URL+"/mcp", "tg_test_agent_key", agreeable{}, &out)
	require.NoError(t, err)
	defer cs.Close()
	require.NoError(t, Run(ctx, cs, "public-holidays", map[string]any{"countryCode": "PT", "year": 2027}, &out))
	assert.Contains(t, out.String(), `"name": "Portugal Day"`)
	gw.Upstream.RequireCalls(t, 1)

	_, err = overHTTP(ctx, srv.URL+"/mcp", "tg_test_wrong_key", agreeable{}, &out)
	assert.Error(t, err, "a wrong key does not connect")
}
