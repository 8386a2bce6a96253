package approvalpage_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/approvalpage"
	"github.com/toolgate/toolgate/authlimit"
	"github.com/toolgate/toolgate/internal/testbrowser"
	"github.com/toolgate/toolgate/storage/sqlite"
	"github.com/toolgate/toolgate/toolgatehttp"
)

// TestStoreSessionsAcrossStores: two instances, each with its own store
// over one SQLite file, as two processes have. Signed in through one, the
// person decides through the other; signed out through either, the
// session ends on both at once; the file holds no token.
func TestStoreSessionsAcrossStores(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "sessions.db")
	a := newApproverGateway(t)
	open := func() *toolgatehttp.StoreSessions {
		s, err := sqlite.Open(ctx, path, nil)
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return toolgatehttp.NewStoreSessions(s, a.clock)
	}
	one, two := a.serve(open()), a.serve(open())
	a.srv = one
	_, req := a.askApproval(agentKey, "echo", `{"v":"hi"}`)
	id := req["id"].(string)

	b := testbrowser.New(t)
	page := b.Get(one.URL+"/approvals/"+id).Form("key").Set("key", patKey).Submit("Sign in")
	require.True(t, page.HasForm("decision"), page.Body)
	u, err := url.Parse(one.URL + "/approvals")
	require.NoError(t, err)
	token := b.Cookie(u, "toolgate_approver_session").Value

	page = b.Get(two.URL + "/approvals/" + id)
	require.True(t, page.HasForm("decision"), "the other instance knows the session: %s", page.Body)
	page = page.Form("decision").Submit("Approve")
	require.Equal(t, http.StatusOK, page.Status, page.Body)
	assert.Equal(t, "approved", a.requestStatus(id))

	stored := ""
	for _, suffix := range []string{"", "-wal"} {
		if raw, err := os.ReadFile(path + suffix); err == nil {
			stored += string(raw)
		}
	}
	sum := sha256.Sum256([]byte(token))
	assert.Contains(t, stored, hex.EncodeToString(sum[:]), "the file names the session by its token's SHA-256")
	assert.NotContains(t, stored, token, "and holds no token")

	page.Form("csrf").Submit("Sign out")
	assert.True(t, b.Get(one.URL+"/approvals").HasForm("key"), "signed out on the first instance at once")

}

// TestStoreSessionsExpire: a session read back from the store ends at its
// expiry, on the gateway's clock.
func TestStoreSessionsExpire(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := newApproverGateway(t)
	s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "sessions.db"), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	sessions := toolgatehttp.NewStoreSessions(s, a.clock)
	want := approvalpage.Session{Approver: "pat", CSRF: "csrf", ExpiresAt: a.clock.Now().Add(15 * time.Minute).UTC()}
	require.NoError(t, sessions.Create(ctx, "id", want))
	got, err := sessions.Get(ctx, "id")
	require.NoError(t, err)
	assert.Equal(t, want, got)
	a.clock.Advance(15 * time.Minute)
	_, err = sessions.Get(ctx, "id")
	assert.ErrorIs(t, err, approvalpage.ErrSessionNotFound)
}

// TestSignInGuessingIsLimited: the 11th wrong approver key in a minute
// from one address is refused with 429 and Retry-After, and so is the
// right key from that address until the window has passed; then it signs
// in.
func TestSignInGuessingIsLimited(t *testing.T) {
	t.Parallel()
	a := newApproverGateway(t)
	limit, err := authlimit.New(&authlimit.Config{Clock: a.clock})
	require.NoError(t, err)
	srv := httptest.NewServer(toolgatehttp.NewHandler(a.gw, &toolgatehttp.Options{Authenticator: a.keys, AuthLimit: limit}))
	t.Cleanup(srv.Close)
	a.srv = srv

	b := testbrowser.New(t)
	signIn := func(key string) *testbrowser.Page {
		t.Helper()
		return b.Get(srv.URL+"/approvals").Form("key").Set("key", key).Submit("Sign in")
	}
	for i := range 10 {
		page := signIn("tg_wrong_guess_" + strconv.Itoa(i))
		require.Equal(t, http.StatusUnauthorized, page.Status, "guess %d", i+1)
		a.clock.Advance(time.Second)
	}
	page := signIn("tg_wrong_guess_11")
	require.Equal(t, http.StatusTooManyRequests, page.Status, page.Body)
	assert.Equal(t, "50", page.Header.Get("Retry-After"), "until a minute after the first failure")
	assert.Contains(t, page.Text(), "Too many failed sign-ins from your address: try again in 50 seconds.")

	page = signIn(patKey)
	assert.Equal(t, http.StatusTooManyRequests, page.Status, "the right key too")
	assert.False(t, page.HasForm("csrf"), "and it is not signed in")
	r := a.do(http.MethodGet, "/v1/approval-requests", patKey, "")
	assert.Equal(t, http.StatusTooManyRequests, r.status, "and on the API beside the pages: %s", r.body)
	assert.Equal(t, "50", r.header.Get("Retry-After"))

	a.clock.Advance(50 * time.Second)
	page = signIn(patKey)
	require.Equal(t, http.StatusOK, page.Status, page.Body)
	assert.True(t, page.HasForm("csrf"), "once the window has passed, the right key signs in")
}
