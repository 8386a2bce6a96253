package approvalpage_test

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
	"github.com/toolgate/toolgate/internal/testbrowser"
	"github.com/toolgate/toolgate/internal/testproc"
	"github.com/toolgate/toolgate/toolgatehttp"
)

// forwardedFor is a browser's way to the gateway through a proxy that
// names the browser's address in X-Forwarded-For.
type forwardedFor struct {
	addr string
	next http.RoundTripper
}

func (f forwardedFor) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Forwarded-For", f.addr)
	return f.next.RoundTrip(r)
}

// serveBehindProxy serves a's gateway, the pages beside the API, with the
// default limits on guessing behind a trusted proxy on loopback; what it
// logs, at any level, goes to the returned log.
func (a *api) serveBehindProxy() *testproc.SyncBuffer {
	a.t.Helper()
	limit, err := authlimit.New(&authlimit.Config{
		Clock:          a.clock,
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")},
	})
	require.NoError(a.t, err)
	logs := &testproc.SyncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	a.srv = httptest.NewServer(toolgatehttp.NewHandler(a.gw, &toolgatehttp.Options{Authenticator: a.keys, AuthLimit: limit, Logger: log}))
	a.t.Cleanup(a.srv.Close)
	return logs
}

// browserAt is a person's browser at addr, behind the proxy.
func browserAt(t *testing.T, addr string) *testbrowser.Browser {
	t.Helper()
	b := testbrowser.New(t)
	b.Client.Transport = forwardedFor{addr: addr, next: http.DefaultTransport}
	return b
}

// TestGuessesAtAnApproversKeyNeverKeepThemFromSigningIn: eleven wrong
// keys that share pat's key prefix, from several addresses, and pat still
// signs in from an address that has not failed, and decides there; the
// page that slows the guessers says it is the key's limit.
func TestGuessesAtAnApproversKeyNeverKeepThemFromSigningIn(t *testing.T) {
	t.Parallel()
	a := newApproverGateway(t)
	logs := a.serveBehindProxy()
	prefix := patKey[:authlimit.DefaultKeyPrefixLength]
	var pages []*testbrowser.Page
	signIn := func(b *testbrowser.Browser, key string) *testbrowser.Page {
		t.Helper()
		page := b.Get(a.srv.URL+"/approvals").Form("key").Set("key", key).Submit("Sign in")
		pages = append(pages, page)
		return page
	}
	guessers := []*testbrowser.Browser{browserAt(t, "198.51.100.1"), browserAt(t, "198.51.100.2"), browserAt(t, "198.51.100.3")}
	for i := range 10 {
		page := signIn(guessers[i%3], prefix+"Zq9wrong"+strconv.Itoa(i))
		require.Equal(t, http.StatusUnauthorized, page.Status, "guess %d", i+1)
	}
	page := signIn(browserAt(t, "198.51.100.4"), prefix+"Zq9wrong10")
	require.Equal(t, http.StatusTooManyRequests, page.Status, page.Body)
	assert.Equal(t, "60", page.Header.Get("Retry-After"))
	assert.Contains(t, page.Text(), "Too many failed sign-ins with keys that begin like this one: try again in 60 seconds.")
	assert.NotContains(t, page.Text(), "from your address", "the guesser's address has not failed ten times")

	_, req := a.askApproval(agentKey, "echo", `{"v":"hi"}`)
	pat := browserAt(t, "203.0.113.9")
	page = signIn(pat, patKey)
	require.Equal(t, http.StatusOK, page.Status, page.Body)
	require.True(t, page.HasForm("csrf"), "pat is signed in from an address that has not failed")
	page = pat.Get(a.srv.URL + "/approvals/" + req["id"].(string))
	pages = append(pages, page)
	require.Equal(t, http.StatusOK, page.Status, page.Body)
	assert.True(t, page.HasForm("decision"), "and can decide the request")

	page = signIn(guessers[1], patKey)
	assert.Equal(t, http.StatusTooManyRequests, page.Status, "the right key from an address that guessed is held back, telling that guesser nothing")
	assert.False(t, page.HasForm("csrf"))

	for _, p := range pages {
		assert.NotContains(t, p.Body, prefix, "a key, or its prefix, on a page")
	}
	assert.NotContains(t, logs.String(), prefix, "a key, or its prefix, in the log")
}

// TestSignInRefusalSaysTheAddressWasLimited: wrong keys of many prefixes
// from one address hold that address back, the right key too, and the
// page says it is the address, not the key.
func TestSignInRefusalSaysTheAddressWasLimited(t *testing.T) {
	t.Parallel()
	a := newApproverGateway(t)
	a.serveBehindProxy()
	guesser := browserAt(t, "203.0.113.66")
	for i := range 10 {
		page := guesser.Get(a.srv.URL+"/approvals").Form("key").Set("key", "tg_guess_"+strconv.Itoa(i)+"_differently").Submit("Sign in")
		require.Equal(t, http.StatusUnauthorized, page.Status, "guess %d", i+1)
		a.clock.Advance(time.Second)
	}
	for _, key := range []string{"tg_guess_eleven", patKey} {
		page := guesser.Get(a.srv.URL+"/approvals").Form("key").Set("key", key).Submit("Sign in")
		require.Equal(t, http.StatusTooManyRequests, page.Status, page.Body)
		assert.Equal(t, "50", page.Header.Get("Retry-After"))
		assert.Contains(t, page.Text(), "Too many failed sign-ins from your address: try again in 50 seconds.")
		assert.NotContains(t, page.Text(), "begin like", "no key prefix failed ten times")
	}
	page := browserAt(t, "203.0.113.67").Get(a.srv.URL+"/approvals").Form("key").Set("key", patKey).Submit("Sign in")
	require.Equal(t, http.StatusOK, page.Status, page.Body)
	assert.True(t, page.HasForm("csrf"), "another address signs in")
}
