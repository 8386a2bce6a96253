package approvalpage_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolgate/toolgate/approvalpage"
	"github.com/toolgate/toolgate/internal/testbrowser"
	"github.com/toolgate/toolgate/toolgatetest"
)

// TestSessionsSharedByInstances: instances whose SessionStore is shared
// know a person signed in on any of them, and signing out on one signs out
// of all; instances with their own memory each ask to sign in.
func TestSessionsSharedByInstances(t *testing.T) {
	t.Parallel()
	a := newApproverGateway(t)
	shared := approvalpage.NewMemorySessionStore(a.clock)
	one, two, alone := a.serve(shared), a.serve(shared), a.serve(nil)
	a.srv = one
	_, req := a.askApproval(agentKey, "echo", `{"v":"hi"}`)
	id := req["id"].(string)

	// The instances differ only in port, which cookies ignore: the browser
	// sends the cookie to each, as it would to instances behind one name.
	b := testbrowser.New(t)
	page := b.Get(one.URL+"/approvals/"+id).Form("key").Set("key", patKey).Submit("Sign in")
	require.True(t, page.HasForm("decision"), page.Body)
	assert.True(t, b.Get(two.URL+"/approvals/"+id).HasForm("decision"), "signed in on the other instance too")
	assert.True(t, b.Get(alone.URL+"/approvals/"+id).HasForm("key"), "an instance with its own sessions asks to sign in")

	// Decided on the second instance, with the session begun on the first.
	values := b.Get(two.URL + "/approvals/" + id).Form("decision").Values
	values.Set("decision", "approve")
	twoURL, err := url.Parse(two.URL + "/approvals/" + id)
	require.NoError(t, err)
	decided := b.Post(twoURL, "", values)
	require.Equal(t, http.StatusOK, decided.Status, decided.Body)
	assert.Equal(t, "approved", a.requestStatus(id))

	// Signed out on the second: out of the first too.
	decided.Form("csrf").Submit("Sign out")
	assert.True(t, b.Get(one.URL+"/approvals/"+id).HasForm("key"))
}

func TestMemorySessionStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := toolgatetest.NewFakeClock(toolgatetest.DefaultStart)
	store := approvalpage.NewMemorySessionStore(clock)
	s := approvalpage.Session{Approver: "pat", CSRF: "token", ExpiresAt: clock.Now().Add(time.Minute)}
	require.NoError(t, store.Create(ctx, "one", s))
	got, err := store.Get(ctx, "one")
	require.NoError(t, err)
	assert.Equal(t, s, got)
	_, err = store.Get(ctx, "two")
	assert.ErrorIs(t, err, approvalpage.ErrSessionNotFound)

	require.NoError(t, store.Delete(ctx, "one"))
	_, err = store.Get(ctx, "one")
	assert.ErrorIs(t, err, approvalpage.ErrSessionNotFound, "signed out")
	require.NoError(t, store.Delete(ctx, "one"), "deleting what is gone is no error")

	require.NoError(t, store.Create(ctx, "one", s))
	clock.Advance(time.Minute)
	_, err = store.Get(ctx, "one")
	assert.ErrorIs(t, err, approvalpage.ErrSessionNotFound, "expired")
}
