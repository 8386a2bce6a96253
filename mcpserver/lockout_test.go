package mcpserver_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/apikey"
	"github.com/toolgate/toolgate/authlimit"
	"github.com/toolgate/toolgate/internal/testproc"
	"github.com/toolgate/toolgate/mcpserver"
	"github.com/toolgate/toolgate/toolgatetest"
)

// TestGuessesAtAKeyNeverLockItsOwnerOutOfMCP: eleven wrong keys that share
// alice's key prefix, from several addresses behind a trusted proxy, slow
// further guesses at that prefix, and name that limit; alice's right key
// from an address that has not failed still opens a session, while an
// address that guessed is held back, its right key too.
func TestGuessesAtAKeyNeverLockItsOwnerOutOfMCP(t *testing.T) {
	t.Parallel()
	gw := toolgatetest.New(t, nil)
	keys := apikey.NewKeyStore()
	require.NoError(t, keys.AddKey("alice", aliceKey))
	limit, err := authlimit.New(&authlimit.Config{
		Clock:          gw.Clock,
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")},
	})
	require.NoError(t, err)
	logs := &testproc.SyncBuffer{}
	h, err := mcpserver.NewHandler(gw.Gateway, &mcpserver.Options{
		Authenticator: keys, AuthLimit: limit,
		Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		h.Close()
		srv.Close()
	})
	prefix := aliceKey[:authlimit.DefaultKeyPrefixLength]
	initializeFrom := func(addr, key string) (int, http.Header, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(initialize))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("X-Forwarded-For", addr)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		assert.NotContains(t, string(body), prefix, "a key, or its prefix, in an answer")
		return resp.StatusCode, resp.Header, string(body)
	}
	for i := range 10 {
		status, _, body := initializeFrom("198.51.100."+strconv.Itoa(1+i%3), prefix+"Zq9wrong"+strconv.Itoa(i))
		require.Equal(t, http.StatusUnauthorized, status, "guess %d: %s", i+1, body)
	}
	status, header, body := initializeFrom("198.51.100.4", prefix+"Zq9wrong10")
	require.Equal(t, http.StatusTooManyRequests, status, body)
	assert.Equal(t, "60", header.Get("Retry-After"))
	assert.Contains(t, body, "too many failed sign-ins with keys that begin like this one; try again in 60 seconds")

	status, _, body = initializeFrom("203.0.113.9", aliceKey)
	assert.Equal(t, http.StatusOK, status, "alice's right key from a fresh address: %s", body)
	status, _, body = initializeFrom("198.51.100.2", aliceKey)
	assert.Equal(t, http.StatusTooManyRequests, status, "from an address that guessed, held back: %s", body)
	assert.NotContains(t, logs.String(), prefix, "a key, or its prefix, in the log")
}
