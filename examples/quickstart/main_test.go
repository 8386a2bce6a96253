package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/storage/memory"
	"github.com/toolgate/toolgate/tools/recorded"
)

// offlineOnly fails any request that would leave the process, proving the
// quickstart needs no network.
type offlineOnly struct{}

func (offlineOnly) RoundTrip(req *http.Request) (*http.Response, error) {
	panic("quickstart tried to reach the network: " + req.URL.String())
}

func TestQuickstartCompletesAndReplaysOffline(t *testing.T) {
	saved := http.DefaultTransport
	http.DefaultTransport = offlineOnly{}
	defer func() { http.DefaultTransport = saved }()

	var out bytes.Buffer
	require.NoError(t, run(context.Background(), &out))
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
	ctx := context.Background()
	gw, err := toolgate.New(memory.New(), &toolgate.Config{Transport: recorded.Transport()})
	require.NoError(t, err)
	q, err := gw.Quote(ctx, "alice", "exchange-rates")
	require.NoError(t, err)
	res, err := gw.Call(ctx, "alice", toolgate.CallRequest{
		Tool:           "exchange-rates",
		QuoteID:        q.Quote.ID,
		Input:          json.RawMessage(`{"base":"USD","quotes":"EUR,GBP,JPY"}`),
		ApprovalDigest: *q.Quote.ManifestDigest,
		IdempotencyKey: "rates-1",
	})
	require.NoError(t, err)
	require.Equal(t, toolgate.StatusCompleted, res.Execution.Status, "%s", res.Body)
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
