package registry_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/apikey"
	"github.com/toolgate/toolgate/internal/secrettest"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/storage/memory"
	"github.com/toolgate/toolgate/toolgatehttp"
)

// disguised is testSecret with an invisible character after its third.
func disguised(invisible string) string { return testSecret[:3] + invisible + testSecret[3:] }

// assertNoSecretRun fails when text shows testSecret or any 8 characters
// of it in a row, however it is read.
func assertNoSecretRun(t *testing.T, text, what string) {
	t.Helper()
	secrettest.AssertNoRun(t, text, testSecret, what)
}

// TestManifestCredentialNeverLeavesCutOrDisguised: a provider echoes the
// key with invisible characters inside (raw, or as JSON escapes), or at
// the end of an error message long enough that shortening would cut it,
// or cut short itself. Over the HTTP API, no call's response, and no
// execution read back, shows the key, its disguised form, or any 8
// characters of it; each shows the redaction instead.
func TestManifestCredentialNeverLeavesCutOrDisguised(t *testing.T) {
	t.Parallel()
	pad := strings.Repeat("x", 185)
	answers := map[string]struct {
		status int
		body   string
	}{
		"zwsp-output":      {200, `{"results":[{"sensor":"echo ` + disguised("\u200b") + `","value":1}]}`},
		"escaped-output":   {200, `{"results":[{"sensor":"echo ` + disguised(`\u200b`) + `","value":1}]}`},
		"soft-hyphen":      {200, `{"results":[{"sensor":"echo ` + disguised("\u00ad") + `","value":1}]}`},
		"word-joiner":      {200, `{"results":[{"sensor":"echo ` + disguised("\u2060\ufeff\u200c\u200d") + `","value":1}]}`},
		"bidi":             {200, `{"results":[{"sensor":"echo ` + disguised("\u202e") + `\u202c","value":1}]}`},
		"long-error":       {401, `{"detail":"` + pad + testSecret + `"}`},
		"long-zwsp-error":  {401, `{"detail":"` + pad + disguised("\u200b") + `"}`},
		"long-cut-error":   {401, `{"detail":"` + pad + testSecret[:15] + `"}`},
		"short-cut-error":  {401, `{"detail":"Invalid key ` + testSecret[:12] + `..."}`},
		"text-zwsp-error":  {502, "bad gateway for " + disguised("\u200b")},
		"long-zwsp-spaced": {401, `{"detail":"` + strings.Repeat("x  ", 62) + disguised("\u200b") + `"}`},
		// Default-ignorable characters that are not Cf draw as nothing
		// too: a variation selector, the combining grapheme joiner, a
		// Hangul filler; and a control character, which no one sees.
		"variation-selector": {200, `{"results":[{"sensor":"echo ` + disguised("\ufe0f") + `","value":1}]}`},
		"grapheme-joiner":    {200, `{"results":[{"sensor":"echo ` + disguised("\u034f") + `","value":1}]}`},
		"hangul-filler":      {200, `{"results":[{"sensor":"echo ` + disguised("\u3164") + `","value":1}]}`},
		"escaped-nul":        {200, `{"results":[{"sensor":"echo ` + disguised(`\u0000`) + `","value":1}]}`},
		"long-vs-error":      {401, `{"detail":"` + pad + disguised("\U000e0100") + `"}`},
	}
	provider := newFakeProvider(t, func(w http.ResponseWriter, r *http.Request) {
		station := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/v3/stations/"), "/latest")
		a, ok := answers[station]
		if !ok {
			answerJSON(404, `{"detail":"no such station"}`)(w, r)
			return
		}
		answerJSON(a.status, a.body)(w, r)
	})

	reg := registry.New()
	tool, err := registry.ParseManifest("tools/station.json", []byte(baseManifest),
		parseOpts(map[string]string{"station-readings": provider.URL}))
	require.NoError(t, err)
	require.NoError(t, reg.Register(tool))
	require.NoError(t, reg.SetOrigin("station-readings", provider.URL))
	gw, err := toolgate.New(memory.New(), &toolgate.Config{Registry: reg})
	require.NoError(t, err)
	keys := apikey.NewKeyStore()
	require.NoError(t, keys.AddKey("alice", "tg_test_alice_key"))
	srv := httptest.NewServer(toolgatehttp.NewHandler(gw, &toolgatehttp.Options{Authenticator: keys}))
	defer srv.Close()

	do := func(method, path, body string, headers ...string) string {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer tg_test_alice_key")
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return string(b)
	}
	for station, a := range answers {
		q := do("POST", "/v1/tools/station-readings/quote", "{}")
		id := between(q, `"quote":{"id":"`, `"`)
		digest := between(q, `"manifestDigest":"`, `"`)
		got := do("POST", "/v1/tools/station-readings/call",
			`{"quoteId":"`+id+`","input":{"stationId":"`+station+`"},"approval":{"manifestDigest":"`+digest+`"}}`,
			"Idempotency-Key", station)
		var exec struct {
			ID     string
			Status string
			Output json.RawMessage
			Error  struct{ Message string }
		}
		require.NoError(t, json.Unmarshal([]byte(got), &exec), "%s: %s", station, got)
		if a.status == 200 {
			assert.Equal(t, "completed", exec.Status, "%s: %s", station, got)
			assert.Contains(t, string(exec.Output), "echo [redacted]", "%s: %s", station, got)
		} else {
			assert.Equal(t, "failed", exec.Status, "%s: %s", station, got)
			assert.Contains(t, exec.Error.Message, "[redacted]", "%s: %s", station, got)
		}
		assertNoSecretRun(t, got, station+"'s call")
		assertNoSecretRun(t, do("GET", "/v1/executions/"+exec.ID, ""), station+"'s execution")
	}
}
