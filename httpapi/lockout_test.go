package httpapi_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/authlimit"
	"github.com/toolgate/toolgate/httpapi"
	"github.com/toolgate/toolgate/internal/testproc"
)

// behindProxy serves a's gateway again with the default limits on
// guessing, behind a trusted proxy on loopback, so that each request's
// X-Forwarded-For is its client's address; everything logged at any
// level goes to the returned buffer.
func (a *api) behindProxy() *testproc.SyncBuffer {
	a.t.Helper()
	limit, err := authlimit.New(&authlimit.Config{
		Clock:          a.clock,
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")},
	})
	require.NoError(a.t, err)
	logs := &testproc.SyncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	a.srv = httptest.NewServer(httpapi.NewHandler(a.gw, &httpapi.Options{Authenticator: a.keys, MaxBodyBytes: 4096, AuthLimit: limit, Logger: log}))
	a.t.Cleanup(a.srv.Close)
	a.client = a.srv.Client()
	return logs
}

// from sends a request as the client at addr behind the proxy.
func from(addr string) []string { return []string{"X-Forwarded-For", addr} }

// TestGuessesAtAnApproversKeyNeverLockThemOut: eleven wrong keys that
// share the approver's key prefix, sent from several addresses, slow
// further guesses at that prefix, but the approver's right key from an
// address that has not failed goes on; an address that guessed is held
// back, its right key too.
func TestGuessesAtAnApproversKeyNeverLockThemOut(t *testing.T) {
	t.Parallel()
	a := newApproverAPI(t)
	logs := a.behindProxy()
	prefix := patKey[:authlimit.DefaultKeyPrefixLength]
	var sent []reply
	guess := func(i int) reply {
		t.Helper()
		r := a.do(http.MethodGet, "/v1/approval-requests", prefix+"Zq9wrong"+strconv.Itoa(i), "", from("198.51.100."+strconv.Itoa(1+i%4))...)
		sent = append(sent, r)
		return r
	}
	for i := range 10 {
		r := guess(i)
		require.Equal(t, http.StatusUnauthorized, r.status, "guess %d: %s", i+1, r.body)
	}
	r := guess(10)
	require.Equal(t, http.StatusTooManyRequests, r.status, "the 11th guess at the prefix is slowed: %s", r.body)
	assert.Equal(t, "rate_limited", r.errorCode(t))
	assert.Equal(t, "60", r.header.Get("Retry-After"))
	assert.Equal(t, "too many failed sign-ins with keys that begin like this one; try again in 60 seconds", r.errorMessage(t), "it names the key's limit, not the address's")

	r = a.do(http.MethodGet, "/v1/approval-requests", patKey, "", from("203.0.113.9")...)
	sent = append(sent, r)
	require.Equal(t, http.StatusOK, r.status, "the approver's right key from a fresh address: %s", r.body)
	q, req := a.askApproval(agentKey, "goal-data", `{"goal":"g","step":1}`)
	require.NotEmpty(t, q.Quote.ID)
	r = a.do(http.MethodPost, "/v1/approval-requests/"+req["id"].(string)+"/approve", patKey, "{}", from("203.0.113.9")...)
	sent = append(sent, r)
	require.Equal(t, http.StatusOK, r.status, "and decides: %s", r.body)

	r = a.do(http.MethodGet, "/v1/approval-requests", patKey, "", from("198.51.100.2")...)
	sent = append(sent, r)
	require.Equal(t, http.StatusTooManyRequests, r.status, "the right key from an address that guessed is held back, so that it tells that guesser nothing: %s", r.body)
	assert.Equal(t, "rate_limited", r.errorCode(t))

	for _, r := range sent {
		assert.NotContains(t, string(r.body), prefix, "a key, or its prefix, in a response")
	}
	assert.NotContains(t, logs.String(), prefix, "a key, or its prefix, in the log")
}

// TestGuessesAtACallersKeyNeverLockThemOut: likewise for a caller's key
// on quote and call.
func TestGuessesAtACallersKeyNeverLockThemOut(t *testing.T) {
	t.Parallel()
	a := newAPI(t, nil)
	logs := a.behindProxy()
	prefix := aliceKey[:authlimit.DefaultKeyPrefixLength]
	for i := range 12 {
		r := a.do(http.MethodPost, "/v1/tools/earthquake-search/quote", prefix+"Zq9wrong"+strconv.Itoa(i), "{}", from("198.51.100."+strconv.Itoa(1+i%3))...)
		want := http.StatusUnauthorized
		if i >= 10 {
			want = http.StatusTooManyRequests
		}
		require.Equal(t, want, r.status, "guess %d: %s", i+1, r.body)
		assert.NotContains(t, string(r.body), prefix)
	}

	fresh := from("203.0.113.10")
	r := a.do(http.MethodPost, "/v1/tools/earthquake-search/quote", aliceKey, "{}", fresh...)
	require.Equal(t, http.StatusCreated, r.status, "the caller's right key from a fresh address quotes: %s", r.body)
	q := a.quote(aliceKey, "earthquake-search") // loopback itself has not failed either
	r = a.call(aliceKey, "earthquake-search", "lockout-1", callBody(q, quakeInput), fresh...)
	require.Equal(t, http.StatusOK, r.status, "and calls: %s", r.body)
	assert.Equal(t, "completed", r.json(t)["status"])

	r = a.call(aliceKey, "earthquake-search", "lockout-2", callBody(q, quakeInput), from("198.51.100.3")...)
	require.Equal(t, http.StatusTooManyRequests, r.status, "from an address that guessed, held back: %s", r.body)
	assert.NotContains(t, logs.String(), prefix, "a key, or its prefix, in the log")
}

// TestAnAddressThatGuessesIsStillLimited: section 22's limit per address
// stands: ten wrong keys of any prefixes from one address, and the
// eleventh request from it is refused whatever its key, the right one
// too, in words that name the address.
func TestAnAddressThatGuessesIsStillLimited(t *testing.T) {
	t.Parallel()
	a := newApproverAPI(t)
	a.behindProxy()
	guesser := from("203.0.113.66")
	for i := range 10 {
		r := a.do(http.MethodGet, "/v1/approval-requests", "tg_guess_"+strconv.Itoa(i)+"_differently", "", guesser...)
		require.Equal(t, http.StatusUnauthorized, r.status, "guess %d: %s", i+1, r.body)
		a.clock.Advance(time.Second)
	}
	for _, key := range []string{"tg_guess_eleven_and_more", patKey} {
		r := a.do(http.MethodGet, "/v1/approval-requests", key, "", guesser...)
		require.Equal(t, http.StatusTooManyRequests, r.status, "%s", r.body)
		assert.Equal(t, "rate_limited", r.errorCode(t))
		assert.Equal(t, "50", r.header.Get("Retry-After"))
		assert.Equal(t, "too many failed sign-ins from this address; try again in 50 seconds", r.errorMessage(t))
	}
	r := a.do(http.MethodGet, "/v1/approval-requests", patKey, "", from("203.0.113.67")...)
	assert.Equal(t, http.StatusOK, r.status, "another address is not held back: %s", r.body)
}
