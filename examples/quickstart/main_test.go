package main

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolgate/toolgate/toolgatetest"
)

func TestQuickstartCompletesAndReplaysOffline(t *testing.T) {
	// The gateway's transport is an in-process fake that answers like the
	// providers and counts what reaches it: the one call the quickstart
	// makes goes through it (so nothing else carried it over the network),
	// and the replay reaches nothing.
	providers := toolgatetest.NewUpstream()
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), &out, providers))
	providers.RequireCalls(t, 1)
	assert.Equal(t, "earthquake.usgs.gov", providers.Requests()[0].URL.Host)
	text := out.String()
	assert.Regexp(t, `execution [0-9a-f-]{36}: status=completed cost=\$0\.0000`, text)
	assert.Contains(t, text, "replayed=true")
	assert.Contains(t, text, "identical bytes=true")
	assert.Contains(t, text, "idempotency_key_reused")

	ids := regexp.MustCompile(`execution ([0-9a-f-]{36})`).FindAllStringSubmatch(text, -1)
	require.Len(t, ids, 2)
	assert.Equal(t, ids[0][1], ids[1][1], "the replay is the same execution")

	// The events listed are what the call asked for: magnitude 4 or more.
	mags := regexp.MustCompile(`(?m)^   - M(\d+\.\d) `).FindAllStringSubmatch(text, -1)
	require.NotEmpty(t, mags, "%s", text)
	for _, m := range mags {
		mag, err := strconv.ParseFloat(m[1], 64)
		require.NoError(t, err)
		assert.GreaterOrEqual(t, mag, 4.0, "%s", text)
	}
	assert.Contains(t, text, "... and 7 more", "ten events in all, the tool's default limit")
}

// TestOfflineExchangeRatesAnswerEveryQuote: offline, an exchange-rates
// call answers each currency it asks for.
func TestOfflineExchangeRatesAnswerEveryQuote(t *testing.T) {
	gw := toolgatetest.New(t, nil)
	res, err := gw.CallApproved(t, "alice", "exchange-rates", `{"base":"USD","quotes":"EUR,GBP,JPY"}`)
	toolgatetest.RequireCompleted(t, res, err, "0.0000")
	var rates []struct {
		Base  string  `json:"base"`
		Quote string  `json:"quote"`
		Rate  float64 `json:"rate"`
	}
	require.NoError(t, json.Unmarshal(res.Execution.Output, &rates))
	require.Len(t, rates, 3, "%s", res.Execution.Output)
	for i, quote := range []string{"EUR", "GBP", "JPY"} {
		assert.Equal(t, "USD", rates[i].Base)
		assert.Equal(t, quote, rates[i].Quote)
		assert.Positive(t, rates[i].Rate)
	}
}
