package approvalpage_test

import (
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/approvalpage"
	"github.com/toolgate/toolgate/internal/testbrowser"
	"github.com/toolgate/toolgate/internal/testidp"
	"github.com/toolgate/toolgate/toolgatehttp"
)

// The people of the provider's tests: pat-person's ID token names the
// approver pat; mallory's names no approver; nora's has no such claim;
// mixup's provider puts another sign-in's nonce in her ID token.
const (
	approverClaim = "toolgate_approver"
	pagesClient   = "toolgate-pages"
	pagesSecret   = "pages-secret"
	signedInPath  = "/approvals/signed-in"
)

var providerUsers = []testidp.User{
	{Subject: "u-pat", Username: "pat-person", Password: "pw-pat", Claims: map[string]any{approverClaim: "pat", "groups": []string{"leads"}}},
	{Subject: "u-mallory", Username: "mallory", Password: "pw-mallory", Claims: map[string]any{approverClaim: "nobody"}},
	{Subject: "u-nora", Username: "nora", Password: "pw-nora"},
	{Subject: "u-mixup", Username: "mixup", Password: "pw-mixup", Claims: map[string]any{approverClaim: "pat"}, Nonce: "another-sign-in"},
}

// providerAPI is newApproverAPI's gateway with the pages signing people in
// through a real OpenID provider too. The gateway is at localhost and the
// provider at 127.0.0.1: two sites, as a browser tells them, so that a
// browser's SameSite rules apply to the round trip as they would in use.
type providerAPI struct {
	*api
	idp  *testidp.Provider
	base string
}

func newProviderAPI(t *testing.T) *providerAPI {
	t.Helper()
	a := newApproverGateway(t)
	idp := testidp.Start(t, "https://toolgate.example/mcp")
	for _, u := range providerUsers {
		idp.AddUser(u)
	}
	srv := httptest.NewUnstartedServer(nil)
	_, port, _ := strings.Cut(srv.Listener.Addr().String(), ":")
	base := "http://localhost:" + port
	idp.AddWebClient(testidp.WebClient{ID: pagesClient, Secret: pagesSecret, RedirectURIs: []string{base + signedInPath}})
	srv.Config.Handler = toolgatehttp.NewHandler(a.gw, &toolgatehttp.Options{Authenticator: a.keys, MaxBodyBytes: 4096,
		Provider: &approvalpage.ProviderSignIn{
			Name: "Test IdP", Issuer: idp.Issuer, ClientID: pagesClient, ClientSecret: pagesSecret,
			RedirectURL: base + signedInPath,
			Approver: func(claims map[string]any) (string, bool) {
				id, _ := claims[approverClaim].(string)
				return id, id == "pat" || id == "sam"
			},
		}})
	srv.Start()
	t.Cleanup(srv.Close)
	a.srv = srv
	return &providerAPI{api: a, idp: idp, base: base}
}

// startSignIn opens page in b and follows "Sign in with Test IdP": the
// browser ends on the provider's login form.
func (p *providerAPI) startSignIn(b *testbrowser.Browser, page string) *testbrowser.Page {
	p.t.Helper()
	opened := b.Get(p.base + page)
	require.Equal(p.t, http.StatusOK, opened.Status, opened.Body)
	login := b.Get(providerLink(p.t, opened))
	require.Equal(p.t, http.StatusOK, login.Status, login.Body)
	require.Equal(p.t, testidp.LoginPath, login.URL.Path, "the provider's login form")
	return login
}

// providerLink is the link of page that signs in through the provider.
func providerLink(t *testing.T, page *testbrowser.Page) string {
	t.Helper()
	return link(t, page, "Sign in with Test IdP")
}

// link is the address of page's button-like link labelled label.
func link(t *testing.T, page *testbrowser.Page, label string) string {
	t.Helper()
	m := regexp.MustCompile(`<a class="button" href="([^"]+)">` + regexp.QuoteMeta(label) + `</a>`).FindStringSubmatch(page.Body)
	require.NotNil(t, m, "no link %q on %s:\n%s", label, page.URL, page.Body)
	u, err := page.URL.Parse(html.UnescapeString(m[1]))
	require.NoError(t, err)
	return u.String()
}

// login signs in at the provider's form as username, and follows the
// redirects back to the gateway.
func login(page *testbrowser.Page, username, password string) *testbrowser.Page {
	return page.Form("username").Set("username", username).Set("password", password).Submit("Sign in")
}

// continueLink is where the signed-in page goes on to.
func continueLink(t *testing.T, page *testbrowser.Page) string {
	t.Helper()
	return link(t, page, "Continue")
}

// TestProviderSignInApprovesARequest: a person opens a request's page,
// signs in through the provider (authorization code with PKCE, as a
// browser follows it), comes back to that page as the approver their ID
// token names, approves, and the agent's call with the grant runs.
// Signing out ends the session on the pages.
func TestProviderSignInApprovesARequest(t *testing.T) {
	t.Parallel()
	p := newProviderAPI(t)
	q, req := p.askApproval(agentKey, "echo", `{"v":"hi"}`)
	id := req["id"].(string)

	b := testbrowser.New(t)
	opened := b.Get(p.base + "/approvals/" + id)
	assert.True(t, opened.HasForm("key"), "approver keys still sign in beside the provider")
	assert.NotContains(t, opened.Body, "Echo", "nothing of the request before signing in")

	back := login(p.startSignIn(b, "/approvals/"+id), "pat-person", "pw-pat")
	require.Equal(t, http.StatusOK, back.Status, back.Body)
	assert.Equal(t, signedInPath, back.URL.Path)
	assert.Contains(t, back.Text(), "Signed in as pat")
	assert.Contains(t, back.Body, `<meta http-equiv="refresh" content="0; url=/approvals/`+id+`">`)
	assert.Nil(t, b.Cookie(back.URL, "toolgate_approver_signin"), "the sign-in's cookie is spent")

	page := b.Get(continueLink(t, back))
	assert.Equal(t, "/approvals/"+id, page.URL.Path, "back on the page the person opened")
	require.True(t, page.HasForm("decision"), page.Body)
	assert.Contains(t, page.Text(), "Signed in as pat")
	values := page.Form("decision").Values
	values.Set("decision", "approve")
	decided := b.Post(page.URL, "", values)
	require.Equal(t, http.StatusOK, decided.Status, decided.Body)
	assert.Equal(t, "approved", p.requestStatus(id))

	r := p.call(agentKey, "echo", "k-provider", q, `{"v":"hi"}`, id)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	assert.Equal(t, "used", p.requestStatus(id))

	// Signing out ends the session: the same browser is asked to sign in,
	// and the cookie it had no longer opens anything.
	old := b.Cookie(page.URL, "toolgate_approver_session")
	require.NotNil(t, old)
	out := decided.Form("csrf").Submit("Sign out")
	assert.True(t, out.HasForm("key"), out.Body)
	stale := testbrowser.New(t)
	pageURL, _ := url.Parse(p.base + "/approvals")
	stale.Client.Jar.SetCookies(pageURL, []*http.Cookie{{Name: old.Name, Value: old.Value, Path: "/approvals"}})
	assert.True(t, stale.Get(p.base+"/approvals/"+id).HasForm("key"), "a signed-out session is over")
	assert.Equal(t, 1, p.idp.Logins())
}

// TestProviderSignInRefusesWhoIsNoApprover: a person whose ID token names
// no approver, or names one the gateway does not have, is refused with
// words that give nothing away, and is not signed in.
func TestProviderSignInRefusesWhoIsNoApprover(t *testing.T) {
	t.Parallel()
	p := newProviderAPI(t)
	_, req := p.askApproval(agentKey, "echo", `{"v":"hi"}`)
	id := req["id"].(string)
	for _, who := range []struct{ username, password string }{{"mallory", "pw-mallory"}, {"nora", "pw-nora"}} {
		t.Run(who.username, func(t *testing.T) {
			b := testbrowser.New(t)
			back := login(p.startSignIn(b, "/approvals/"+id), who.username, who.password)
			assert.Equal(t, http.StatusForbidden, back.Status, back.Body)
			assert.Contains(t, back.Text(), "you are not an approver of this gateway")
			for _, secret := range []string{"Echo", "agent", "nobody", "u-mallory", id} {
				assert.NotContains(t, back.Body, secret)
			}
			assert.Nil(t, b.Cookie(back.URL, "toolgate_approver_session"))
			assert.True(t, b.Get(p.base+"/approvals/"+id).HasForm("key"), "still signed out")
		})
	}
}

// TestProviderSignInTampering: the redirect back signs in only the
// browser that started the sign-in, once, within 10 minutes, with the
// state it was given and an ID token carrying its nonce.
func TestProviderSignInTampering(t *testing.T) {
	t.Parallel()
	p := newProviderAPI(t)
	// held stops b at the redirect back to the gateway, and returns it.
	held := func(t *testing.T, b *testbrowser.Browser, username, password string) *url.URL {
		t.Helper()
		b.Client.CheckRedirect = func(req *http.Request, _ []*http.Request) error {
			if req.URL.Path == signedInPath {
				return http.ErrUseLastResponse
			}
			return nil
		}
		defer func() { b.Client.CheckRedirect = nil }()
		stop := login(p.startSignIn(b, "/approvals"), username, password)
		require.Equal(t, http.StatusFound, stop.Status, stop.Body)
		back, err := url.Parse(stop.Header.Get("Location"))
		require.NoError(t, err)
		require.Equal(t, signedInPath, back.Path)
		return back
	}
	refused := func(t *testing.T, page *testbrowser.Page, status int, words string) {
		t.Helper()
		assert.Equal(t, status, page.Status, page.Body)
		assert.Contains(t, page.Text(), words)
		assert.Nil(t, getCookie(page, "toolgate_approver_session"), "nobody signed in")
	}
	const lost = "This sign-in was not started in this browser, or took too long."
	const notSignedIn = "The identity provider did not sign you in."

	t.Run("another state", func(t *testing.T) {
		b := testbrowser.New(t)
		back := held(t, b, "pat-person", "pw-pat")
		q := back.Query()
		q.Set("state", q.Get("state")+"x")
		back.RawQuery = q.Encode()
		refused(t, b.Get(back.String()), http.StatusBadRequest, lost)
	})
	t.Run("no state", func(t *testing.T) {
		b := testbrowser.New(t)
		back := held(t, b, "pat-person", "pw-pat")
		q := back.Query()
		q.Del("state")
		back.RawQuery = q.Encode()
		refused(t, b.Get(back.String()), http.StatusBadRequest, lost)
	})
	t.Run("another browser", func(t *testing.T) {
		// Login CSRF: an attacker's own code, sent to a victim's browser.
		back := held(t, testbrowser.New(t), "pat-person", "pw-pat")
		refused(t, testbrowser.New(t).Get(back.String()), http.StatusBadRequest, lost)
	})
	t.Run("the sign-in cookie altered", func(t *testing.T) {
		b := testbrowser.New(t)
		back := held(t, b, "pat-person", "pw-pat")
		c := getCookieAt(b, back, "toolgate_approver_signin")
		require.NotNil(t, c)
		flipped := []byte(c.Value)
		flipped[len(flipped)/2] ^= 1
		b.Client.Jar.SetCookies(back, []*http.Cookie{{Name: c.Name, Value: string(flipped), Path: signedInPath}})
		refused(t, b.Get(back.String()), http.StatusBadRequest, lost)
	})
	t.Run("after 10 minutes", func(t *testing.T) {
		b := testbrowser.New(t)
		back := held(t, b, "pat-person", "pw-pat")
		p.clock.Advance(10*time.Minute + time.Second)
		refused(t, b.Get(back.String()), http.StatusBadRequest, lost)
	})
	t.Run("an ID token with another nonce", func(t *testing.T) {
		b := testbrowser.New(t)
		refused(t, login(p.startSignIn(b, "/approvals"), "mixup", "pw-mixup"), http.StatusUnauthorized, notSignedIn)
	})
	t.Run("the provider's error", func(t *testing.T) {
		b := testbrowser.New(t)
		back := held(t, b, "pat-person", "pw-pat")
		q := back.Query()
		q.Del("code")
		q.Set("error", "access_denied")
		back.RawQuery = q.Encode()
		refused(t, b.Get(back.String()), http.StatusUnauthorized, notSignedIn)
	})
	t.Run("sent twice", func(t *testing.T) {
		b := testbrowser.New(t)
		back := held(t, b, "pat-person", "pw-pat")
		c := getCookieAt(b, back, "toolgate_approver_signin")
		require.NotNil(t, c)
		first := b.Get(back.String())
		require.Equal(t, http.StatusOK, first.Status, first.Body)
		assert.NotNil(t, getCookie(first, "toolgate_approver_session"))
		// The same redirect, with the same sign-in cookie, from a
		// browser that stole both: the state is spent.
		thief := testbrowser.New(t)
		thief.Client.Jar.SetCookies(back, []*http.Cookie{{Name: c.Name, Value: c.Value, Path: signedInPath}})
		refused(t, thief.Get(back.String()), http.StatusBadRequest, lost)
	})
}

// TestProviderSignInBesideKeys: with the provider on, an approver key
// still signs in, and the sign-in form offers both.
func TestProviderSignInBesideKeys(t *testing.T) {
	t.Parallel()
	p := newProviderAPI(t)
	_, req := p.askApproval(agentKey, "echo", `{"v":"hi"}`)
	id := req["id"].(string)
	b := testbrowser.New(t)
	opened := b.Get(p.base + "/approvals/" + id)
	providerLink(t, opened)
	page := opened.Form("key").Set("key", patKey).Submit("Sign in")
	require.True(t, page.HasForm("decision"), page.Body)
	assert.Equal(t, 0, p.idp.Logins())
}

// TestProviderSignInWhenTheProviderIsDown: the person is told, and may
// still sign in with a key.
func TestProviderSignInWhenTheProviderIsDown(t *testing.T) {
	t.Parallel()
	a := newApproverGateway(t)
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	srv := httptest.NewServer(toolgatehttp.NewHandler(a.gw, &toolgatehttp.Options{Authenticator: a.keys,
		Provider: &approvalpage.ProviderSignIn{Name: "Test IdP", Issuer: gone.URL, ClientID: pagesClient, RedirectURL: gone.URL + signedInPath}}))
	t.Cleanup(srv.Close)
	b := testbrowser.New(t)
	page := b.Get(providerLink(t, b.Get(srv.URL+"/approvals")))
	assert.Equal(t, http.StatusBadGateway, page.Status)
	assert.Contains(t, page.Text(), "The identity provider cannot be reached.")
	assert.Contains(t, page.Body, `href="/approvals"`, "a way back to the sign-in page")
	assert.True(t, b.Get(srv.URL+"/approvals").HasForm("key"), "keys still sign in")
}

func getCookie(page *testbrowser.Page, name string) *http.Cookie {
	for _, c := range page.Header.Values("Set-Cookie") {
		if parsed, err := http.ParseSetCookie(c); err == nil && parsed.Name == name && parsed.MaxAge >= 0 {
			return parsed
		}
	}
	return nil
}

func getCookieAt(b *testbrowser.Browser, u *url.URL, name string) *http.Cookie {
	for _, c := range b.Client.Jar.Cookies(u) {
		if c.Name == name {
			return c
		}
	}
	return nil
}
