package main

import (
	"crypto/rand"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/testbrowser"
)

// TestServerGuessesNeverLockOutTheRightKey runs two instances on one
// store, SQLite and PostgreSQL (when TOOLGATE_TEST_POSTGRES_URL names
// one), behind a proxy they trust on loopback: eleven wrong keys sharing
// the approver's key prefix, and eleven sharing the caller's, from several
// addresses through both instances, slow guesses at those prefixes, and
// say so; the approver still signs in on the page and works on the API,
// and the caller still quotes, from addresses that have not failed. An
// address that guessed stays held back. No key is in any answer, log line
// or stored record.
func TestServerGuessesNeverLockOutTheRightKey(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		storage func(t *testing.T) (storage, dbPath string)
	}{
		{"SQLite", func(t *testing.T) (string, string) {
			p := filepath.Join(t.TempDir(), "lockout.db")
			return "sqlite:" + p, p
		}},
		{"PostgreSQL", func(t *testing.T) (string, string) {
			dbURL := os.Getenv("TOOLGATE_TEST_POSTGRES_URL")
			if dbURL == "" {
				t.Skip("TOOLGATE_TEST_POSTGRES_URL is not set")
			}
			return dbURL, ""
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			storage, dbPath := c.storage(t)
			testGuessesNeverLockOut(t, storage, dbPath)
		})
	}
}

// addresses returns n client addresses of this run's own (198.18.0.0/15,
// random), so that runs sharing a database never count in each other's
// windows.
func addresses(t *testing.T, n int) []string {
	t.Helper()
	b := make([]byte, 2)
	_, err := rand.Read(b)
	require.NoError(t, err)
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("198.%d.%d.%d", 18+b[0]%2, b[1], i+1)
	}
	return out
}

// proxied is a browser's way through the proxy, which names the browser's
// address in X-Forwarded-For.
type proxied struct{ addr string }

func (p proxied) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Forwarded-For", p.addr)
	return http.DefaultTransport.RoundTrip(r)
}

func testGuessesNeverLockOut(t *testing.T, storage, dbPath string) {
	// Keys and names of their own, the keys random from their 4th
	// character, so that no prefix is shared with another run.
	agentID, patID := randomKey(t, "agent-"), randomKey(t, "pat-")
	agentKey, patKey := randomKey(t, "tg_"), randomKey(t, "tg_")
	path := writeConfig(t, map[string]any{
		"listen":     "127.0.0.1:0",
		"storage":    storage,
		"limits":     map[string]any{"trustedProxies": []string{"127.0.0.1", "::1"}},
		"principals": []any{map[string]any{"id": agentID, "apiKeys": []string{agentKey}, "approvalMode": "approver"}},
		"approvers":  []any{map[string]any{"id": patID, "keys": []string{patKey}, "principals": []string{agentID}}},
	})
	a, b, baseA, baseB := fleetOf(t, path)
	var answers []string
	keep := func(status int, body string) { answers = append(answers, fmt.Sprint(status, " ", body)) }
	addr := addresses(t, 8)
	guessers, fresh := addr[:4], addr[4:]

	for _, target := range []struct{ name, key, path string }{
		{"the approver's", patKey, "/v1/approval-requests"},
		{"the caller's", agentKey, "/v1/tools/earthquake-search/quote"},
	} {
		method := http.MethodGet
		if strings.HasSuffix(target.path, "/quote") {
			method = http.MethodPost
		}
		for i := range 11 {
			guess := client{t: t, base: []string{baseA, baseB}[i%2], key: target.key[:12] + randomKey(t, "")}
			r := guess.do(method, target.path, map[string]any{}, "X-Forwarded-For", guessers[i%4])
			keep(r.status, string(r.body))
			if i < 10 {
				require.Equal(t, http.StatusUnauthorized, r.status, "%s prefix, guess %d: %s", target.name, i+1, r.body)
				continue
			}
			require.Equal(t, http.StatusTooManyRequests, r.status, "%s prefix, the 11th guess: %s", target.name, r.body)
			assert.Contains(t, string(r.body), "with keys that begin like this one", "the limit named")
			assert.NotEmpty(t, r.header.Get("Retry-After"))
		}
	}

	// The caller quotes and asks, from an address that has not failed.
	agent := client{t: t, base: baseB, key: agentKey}
	r := agent.do(http.MethodPost, "/v1/tools/earthquake-search/quote", map[string]any{}, "X-Forwarded-For", fresh[0])
	keep(r.status, string(r.body))
	require.Equal(t, http.StatusCreated, r.status, "the caller's right key: %s", r.body)
	quoteID := r.json(t)["quote"].(map[string]any)["id"].(string)
	r = agent.do(http.MethodPost, "/v1/approval-requests", map[string]any{"quoteId": quoteID, "input": map[string]any{"starttime": "2024-09-25"}}, "X-Forwarded-For", fresh[0])
	keep(r.status, string(r.body))
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	id := r.json(t)["id"].(string)

	// The approver signs in on A and decides there, from another.
	pat := testbrowser.New(t)
	pat.Client.Transport = proxied{fresh[1]}
	page := pat.Get(baseA+"/approvals/"+id).Form("key").Set("key", patKey).Submit("Sign in")
	keep(page.Status, page.Body)
	require.Equal(t, http.StatusOK, page.Status, page.Body)
	require.True(t, page.HasForm("decision"), "signed in, the request shows")
	// And on the API through B, from a third.
	r = client{t: t, base: baseB, key: patKey}.do(http.MethodGet, "/v1/approval-requests/"+id, nil, "X-Forwarded-For", fresh[2])
	keep(r.status, string(r.body))
	require.Equal(t, http.StatusOK, r.status, "the approver's right key on the API: %s", r.body)

	// An address that guessed is held back, the right key too, and the
	// page says it is the key's limit.
	guesser := testbrowser.New(t)
	guesser.Client.Transport = proxied{guessers[1]}
	page = guesser.Get(baseB+"/approvals").Form("key").Set("key", patKey).Submit("Sign in")
	keep(page.Status, page.Body)
	require.Equal(t, http.StatusTooManyRequests, page.Status, page.Body)
	assert.Contains(t, page.Text(), "Too many failed sign-ins with keys that begin like this one")
	assert.False(t, page.HasForm("csrf"))
	r = agent.do(http.MethodPost, "/v1/tools/earthquake-search/quote", map[string]any{}, "X-Forwarded-For", guessers[2])
	keep(r.status, string(r.body))
	assert.Equal(t, http.StatusTooManyRequests, r.status, "%s", r.body)

	assert.Equal(t, 0, a.stop(exitTimeout))
	assert.Equal(t, 0, b.stop(exitTimeout))
	out := a.stdout.String() + a.stderr.String() + b.stdout.String() + b.stderr.String() + strings.Join(answers, "\n")
	for _, s := range []string{agentKey[:12], patKey[:12]} {
		assert.NotContains(t, out, s, "no key, nor its prefix, in any answer or log line")
	}
	if dbPath != "" {
		assertNotStored(t, dbPath, agentKey[:12], patKey[:12])
	}
}
