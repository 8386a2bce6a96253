package approvalpage_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/approvalpage"
	"github.com/toolgate/toolgate/internal/testbrowser"
)

// hostileInput is a goal-data input a hostile agent could send, hoping a
// page would run it.
const hostileInput = `{"goal":"<script>alert('pwned')</script><img src=x onerror=alert(1)>","step":1}`

// signedIn returns a browser signed in on the page of request id with key.
func (a *api) signedIn(id, key string) (*testbrowser.Browser, *testbrowser.Page) {
	a.t.Helper()
	b := testbrowser.New(a.t)
	page := b.Get(a.srv.URL + "/approvals/" + id)
	require.Equal(a.t, http.StatusOK, page.Status)
	page = page.Form("key").Set("key", key).Submit("Sign in")
	return b, page
}

func TestApprovalPageShowsNothingBeforeSignIn(t *testing.T) {
	t.Parallel()
	a := newApproverAPI(t)
	_, req := a.askApproval(agentKey, "goal-data", hostileInput)
	id := req["id"].(string)

	for _, path := range []string{"/approvals/" + id, "/approvals", "/approvals/not-even-an-id"} {
		page := testbrowser.New(t).Get(a.srv.URL + path)
		require.Equal(t, http.StatusOK, page.Status, path)
		assert.True(t, page.HasForm("key"), "a sign-in form")
		for _, secret := range []string{"Goal Data", "goal-data", "agent", "0.1100", "summit", "script", req["manifestDigest"].(string)} {
			assert.NotContains(t, page.Body, secret, "%s shows nothing about the call before sign-in", path)
		}
		input := page.Elements("input")
		var password bool
		for _, in := range input {
			for _, at := range in.Attr {
				password = password || (at.Key == "type" && at.Val == "password")
			}
		}
		assert.True(t, password, "the key goes in a password field")
		assert.Equal(t, "POST", strings.ToUpper(page.Form("key").Method), "keys never travel in URLs")
	}
}

func TestApprovalPageSignInApproveAndCall(t *testing.T) {
	t.Parallel()
	a := newApproverAPI(t)
	q, req := a.askApproval(agentKey, "goal-data", hostileInput)
	id := req["id"].(string)

	b, page := a.signedIn(id, patKey)
	require.Equal(t, http.StatusOK, page.Status, page.Body)
	assert.Equal(t, "/approvals/"+id, page.URL.Path, "back on the request's page after signing in")

	cookie := b.Cookie(page.URL, "toolgate_approver_session")
	require.NotNil(t, cookie, "signed in with a session cookie")
	assert.NotContains(t, cookie.Value, patKey)

	// Everything a person needs to decide, escaped.
	text := page.Text()
	for _, want := range []string{"Goal Data", "goal-data", "agent", "0.1000 USD", "0.0100 USD", "0.1100 USD",
		req["manifestDigest"].(string), "Toolgate Demo Provider", "medium", "Expires at",
		"<script>alert('pwned')</script>"} {
		assert.Contains(t, text, want)
	}
	assert.NotContains(t, page.Body, "<script>", "the input is shown, never run")
	assert.NotContains(t, page.Body, "<img src=x")
	assert.Contains(t, page.Body, "&lt;script&gt;alert(&#39;pwned&#39;)&lt;/script&gt;")
	assert.Contains(t, page.Body, "\n  &#34;goal&#34;:", "the input is pretty-printed")
	csp := page.Header.Get("Content-Security-Policy")
	assert.Contains(t, csp, "default-src 'none'")
	assert.NotContains(t, csp, "script-src")
	assert.Contains(t, csp, "form-action 'self'")
	assert.Contains(t, page.Body, `name="viewport"`, "readable on a phone")

	page = page.Form("decision").Submit("Approve")
	require.Equal(t, http.StatusOK, page.Status, page.Body)
	assert.Contains(t, page.Text(), "approved")
	assert.Contains(t, page.Text(), "decided by pat")
	assert.False(t, page.HasForm("decision"), "a decided request offers no buttons")
	assert.Equal(t, "approved", a.requestStatus(id))

	r := a.call(agentKey, "goal-data", "k1", q, hostileInput, id)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	assert.Equal(t, "completed", r.json(t)["status"])
}

func TestApprovalPageSessionCookie(t *testing.T) {
	t.Parallel()
	a := newApproverAPI(t)
	_, req := a.askApproval(agentKey, "echo", `{"v":"hi"}`)
	id := req["id"].(string)
	for _, c := range []struct {
		name   string
		header [2]string
		secure bool
	}{
		{"Plain", [2]string{}, false},
		{"BehindATLSProxy", [2]string{"X-Forwarded-Proto", "https"}, true},
	} {
		form := url.Values{"action": {"sign-in"}, "key": {patKey}}
		httpReq, err := http.NewRequest(http.MethodPost, a.srv.URL+"/approvals/"+id, strings.NewReader(form.Encode()))
		require.NoError(t, err)
		httpReq.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		httpReq.Header.Set("Origin", a.srv.URL)
		if c.header[0] != "" {
			httpReq.Header.Set(c.header[0], c.header[1])
			httpReq.Header.Set("Origin", "https://"+strings.TrimPrefix(a.srv.URL, "http://"))
		}
		resp, err := http.DefaultTransport.RoundTrip(httpReq)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, c.name)
		cookies := resp.Cookies()
		require.Len(t, cookies, 1, c.name)
		ck := cookies[0]
		assert.True(t, ck.HttpOnly, c.name)
		assert.Equal(t, http.SameSiteStrictMode, ck.SameSite, c.name)
		assert.Equal(t, c.secure, ck.Secure, c.name)
		assert.Equal(t, 900, ck.MaxAge, "15 minutes")
		assert.Equal(t, "/approvals", ck.Path)
	}

	// After 15 minutes the session is over: the page asks to sign in again.
	b, page := a.signedIn(id, patKey)
	require.True(t, page.HasForm("decision"))
	a.clock.Advance(15 * time.Minute)
	page = b.Get(a.srv.URL + "/approvals/" + id)
	assert.True(t, page.HasForm("key"))
	assert.False(t, page.HasForm("decision"))
}

func TestApprovalPageRefusesWhatIsNotAnApprover(t *testing.T) {
	t.Parallel()
	a := newApproverAPI(t)
	_, req := a.askApproval(agentKey, "echo", `{"v":"hi"}`)
	id := req["id"].(string)
	for _, key := range []string{agentKey, "tg_guess", ""} {
		b, page := a.signedIn(id, key)
		assert.Equal(t, http.StatusUnauthorized, page.Status, "key %q", key)
		assert.Nil(t, b.Cookie(page.URL, "toolgate_approver_session"))
		assert.True(t, page.HasForm("key"))
		assert.NotContains(t, page.Body, "Echo")
	}
}

// TestApprovalPageNamesACallersKey: a person who signs in with a caller's
// API key is told it is one and which key to use, on the pages served
// beside the API and on the pages served alone over a KeyStore; any other
// key that is not an approver's is refused with the same words as before,
// whatever it is, and no page shows the key sent.
func TestApprovalPageNamesACallersKey(t *testing.T) {
	t.Parallel()
	a := newApproverAPI(t)
	_, req := a.askApproval(agentKey, "echo", `{"v":"hi"}`)
	id := req["id"].(string)
	alone := httptest.NewServer(approvalpage.NewHandler(a.gw, &approvalpage.Options{Approvers: a.keys}))
	t.Cleanup(alone.Close)

	const callersWords = "That is a caller's API key; the approval pages take an approver key: sign in with yours, or ask the gateway's operator for one."
	for _, srv := range []*httptest.Server{a.srv, alone} {
		for _, c := range []struct {
			key, says string
		}{
			{agentKey, callersWords},
			{aliceKey, callersWords},
			{agentKey + "x", "That is not an approver key."}, // a caller's key and more
			{"tg_guess", "That is not an approver key."},
		} {
			b := testbrowser.New(t)
			page := b.Get(srv.URL+"/approvals/"+id).Form("key").Set("key", c.key).Submit("Sign in")
			assert.Equal(t, http.StatusUnauthorized, page.Status, "key %q", c.key)
			assert.Nil(t, b.Cookie(page.URL, "toolgate_approver_session"), "key %q signs no one in", c.key)
			assert.True(t, page.HasForm("key"), "the sign-in form again")
			alerts := page.Elements("p")
			var said []string
			for _, p := range alerts {
				for _, at := range p.Attr {
					if at.Key == "role" && at.Val == "alert" {
						said = append(said, textOf(p))
					}
				}
			}
			assert.Equal(t, []string{c.says}, said, "key %q", c.key)
			assert.NotContains(t, page.Body, c.key, "the key is never shown")
			assert.NotContains(t, page.Body, "agent", "nothing about whose key it is")
		}
	}
}

// TestCallersKeyOnThePageIsNoGuess: a person who pasted a caller's key
// again and again still signs in with the approver key from the same
// address, as on the API an approver key sent to a caller's route is
// no failed sign-in.
func TestCallersKeyOnThePageIsNoGuess(t *testing.T) {
	t.Parallel()
	a := newApproverGateway(t)
	a.serveBehindProxy()
	person := browserAt(t, "203.0.113.10")
	for i := range 11 {
		page := person.Get(a.srv.URL+"/approvals").Form("key").Set("key", agentKey).Submit("Sign in")
		require.Equal(t, http.StatusUnauthorized, page.Status, "try %d: %s", i+1, page.Body)
	}
	page := person.Get(a.srv.URL+"/approvals").Form("key").Set("key", patKey).Submit("Sign in")
	require.Equal(t, http.StatusOK, page.Status, page.Body)
	assert.True(t, page.HasForm("csrf"), "pat is signed in")
}

func TestApprovalPageResistsForgery(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		// forge changes the decide form a signed-in approver's browser
		// would send, as another site or a script could.
		forge  func(form url.Values, h http.Header)
		status int
	}{
		{"AnotherSitesOrigin", func(_ url.Values, h http.Header) { h.Set("Origin", "https://evil.example") }, http.StatusForbidden},
		{"NullOrigin", func(_ url.Values, h http.Header) { h.Set("Origin", "null") }, http.StatusForbidden},
		{"NoOriginNoReferer", func(_ url.Values, h http.Header) { h.Del("Origin") }, http.StatusForbidden},
		{"AnotherSitesReferer", func(_ url.Values, h http.Header) {
			h.Del("Origin")
			h.Set("Referer", "https://evil.example/approvals")
		}, http.StatusForbidden},
		{"MissingToken", func(f url.Values, _ http.Header) { f.Del("csrf") }, http.StatusForbidden},
		{"WrongToken", func(f url.Values, _ http.Header) { f.Set("csrf", "guessed") }, http.StatusForbidden},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			a := newApproverAPI(t)
			_, req := a.askApproval(agentKey, "echo", `{"v":"hi"}`)
			id := req["id"].(string)
			b, page := a.signedIn(id, patKey)
			form := page.Form("decision")
			values := url.Values{}
			for k, v := range form.Values {
				values[k] = v
			}
			values.Set("decision", "approve")
			httpReq, err := http.NewRequest(http.MethodPost, page.URL.String(), nil)
			require.NoError(t, err)
			httpReq.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			httpReq.Header.Set("Origin", a.srv.URL)
			c.forge(values, httpReq.Header)
			httpReq.Body = nopBody([]byte(values.Encode()))
			httpReq.ContentLength = int64(len(values.Encode()))
			got := b.Do(httpReq)
			assert.Equal(t, c.status, got.Status, got.Body)
			assert.Contains(t, got.Text(), "Refused")
			assert.Equal(t, "pending", a.requestStatus(id), "a forged form decides nothing")
		})
	}

	t.Run("ARefererFromThisOriginIsEnough", func(t *testing.T) {
		t.Parallel()
		a := newApproverAPI(t)
		_, req := a.askApproval(agentKey, "echo", `{"v":"hi"}`)
		id := req["id"].(string)
		b, page := a.signedIn(id, patKey)
		values := page.Form("decision").Values
		values.Set("decision", "deny")
		httpReq, err := http.NewRequest(http.MethodPost, page.URL.String(), strings.NewReader(values.Encode()))
		require.NoError(t, err)
		httpReq.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		httpReq.Header.Set("Referer", page.URL.String())
		got := b.Do(httpReq)
		assert.Equal(t, http.StatusOK, got.Status, got.Body)
		assert.Equal(t, "denied", a.requestStatus(id))
	})
}

func TestApprovalPageSessionDecidesOnlyItsApproversRequests(t *testing.T) {
	t.Parallel()
	a := newApproverAPI(t)
	_, mine := a.askApproval(agentKey, "echo", `{"v":"hi"}`)
	id := mine["id"].(string)

	// sam, signed in, sees nothing of pat's principal's request, and
	// cannot decide it with sam's own session and token.
	b, page := a.signedIn(id, samKey)
	assert.Equal(t, http.StatusNotFound, page.Status)
	assert.NotContains(t, page.Body, "Echo")
	list := b.Get(a.srv.URL + "/approvals")
	assert.Contains(t, list.Text(), "Nothing is waiting")
	token := list.Form("csrf").Values.Get("csrf")
	require.NotEmpty(t, token)
	got := b.Post(page.URL, "", url.Values{"action": {"decide"}, "csrf": {token}, "decision": {"approve"}})
	assert.Equal(t, http.StatusNotFound, got.Status, got.Body)
	assert.Equal(t, "pending", a.requestStatus(id))

	// pat's list shows it, and links to its page.
	b, _ = a.signedIn(id, patKey)
	list = b.Get(a.srv.URL + "/approvals")
	require.Equal(t, http.StatusOK, list.Status)
	assert.Contains(t, list.Body, `href="/approvals/`+id+`"`)
	assert.Contains(t, list.Text(), "agent")

	// Signing out ends the session.
	out := list.Form("csrf").Submit("Sign out")
	assert.True(t, out.HasForm("key"))
	assert.True(t, b.Get(a.srv.URL+"/approvals/"+id).HasForm("key"))
}

// TestRequestPageFollowsItsState: the heading asks a question only while
// the request is pending, the buttons are there only then, and times are
// shown relative to now beside the UTC time.
func TestRequestPageFollowsItsState(t *testing.T) {
	t.Parallel()
	a := newApproverAPI(t)
	_, expired := a.askApproval(agentKey, "echo", `{"v":"expired"}`)
	a.clock.Advance(toolgate.DefaultApprovalTTL)
	q, used := a.askApproval(agentKey, "echo", `{"v":"used"}`)
	_, approved := a.askApproval(agentKey, "echo", `{"v":"approved"}`)
	_, denied := a.askApproval(agentKey, "echo", `{"v":"denied"}`)
	_, pending := a.askApproval(agentKey, "echo", `{"v":"pending"}`)
	for id, route := range map[string]string{used["id"].(string): "approve", approved["id"].(string): "approve", denied["id"].(string): "deny"} {
		require.Equal(t, http.StatusOK, a.do("POST", "/v1/approval-requests/"+id+"/"+route, patKey, "").status)
	}
	require.Equal(t, http.StatusOK, a.call(agentKey, "echo", "k1", q, `{"v":"used"}`, used["id"].(string)).status)
	a.clock.Advance(4 * time.Minute)

	b, _ := a.signedIn(pending["id"].(string), patKey)
	for _, c := range []struct {
		id, heading, state string
		decidable          bool
		says               []string
	}{
		{pending["id"].(string), "Approve a call of Echo?", "pending", true, []string{"expires in 26 min (2026-03-14 13:00:00 UTC)", `v: "pending"`}},
		{approved["id"].(string), "Approved: a call of Echo", "approved", false, []string{"decided by pat 4 min ago", "the call may run until 2026-03-14 13:00:00 UTC (in 26 min)"}},
		{denied["id"].(string), "Denied: a call of Echo", "denied", false, []string{"decided by pat 4 min ago", "the call will not run"}},
		{used["id"].(string), "Used: the approved call of Echo ran", "used", false, []string{"the call ran once"}},
		{expired["id"].(string), "Expired: a call of Echo", "expired", false, []string{"nobody decided in time", "it expired 4 min ago (2026-03-14 12:30:00 UTC)"}},
	} {
		page := b.Get(a.srv.URL + "/approvals/" + c.id)
		require.Equal(t, http.StatusOK, page.Status)
		h1 := page.Elements("h1")
		require.Len(t, h1, 1)
		assert.Equal(t, c.heading, textOf(h1[0]), c.state)
		assert.Equal(t, c.decidable, page.HasForm("decision"), c.state)
		text := strings.Join(strings.Fields(page.Text()), " ")
		assert.Contains(t, text, c.state, c.state)
		for _, s := range c.says {
			assert.Contains(t, text, s, c.state)
		}
		if !c.decidable {
			assert.NotContains(t, text, "Approve a call", c.state)
		}
	}
	list := b.Get(a.srv.URL + "/approvals")
	assert.Contains(t, strings.Join(strings.Fields(list.Text()), " "), "in 26 min (2026-03-14 13:00:00 UTC)")
}

// TestRequestPageTotalSaysFreeOrWhatItCosts: a free call's total says it
// is free, not three zero amounts; a paid call's gives its price and fee.
// The list of requests says the same.
func TestRequestPageTotalSaysFreeOrWhatItCosts(t *testing.T) {
	t.Parallel()
	a := newApproverAPI(t)
	_, free := a.askApproval(agentKey, "echo", `{"v":"free"}`)
	_, paid := a.askApproval(agentKey, "goal-data", `{"goal":"reach the summit","step":1}`)

	b, _ := a.signedIn(free["id"].(string), patKey)
	for _, c := range []struct {
		id, total, not string
	}{
		{free["id"].(string), "Total Free: no charge for this call", "for one call"},
		{paid["id"].(string), "Total 0.1100 USD for one call: 0.1000 USD and a 0.0100 USD fee", "Free"},
	} {
		page := b.Get(a.srv.URL + "/approvals/" + c.id)
		require.Equal(t, http.StatusOK, page.Status, page.Body)
		var total string
		for _, dd := range page.Elements("dd") {
			if dd.PrevSibling != nil && textOf(dd.PrevSibling) == "Total" && total == "" {
				total = "Total " + textOf(dd)
			}
		}
		assert.Equal(t, c.total, total)
		assert.NotContains(t, page.Text(), c.not)
	}

	list := b.Get(a.srv.URL + "/approvals")
	require.Equal(t, http.StatusOK, list.Status, list.Body)
	var totals []string
	for _, td := range list.Elements("td") {
		for _, at := range td.Attr {
			if at.Key == "data-label" && at.Val == "Total" {
				totals = append(totals, textOf(td))
			}
		}
	}
	assert.ElementsMatch(t, []string{"Free", "0.1100 USD"}, totals, "the list says so too")
}

// textOf is the text of an element, its spaces folded.
func textOf(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return strings.Join(strings.Fields(b.String()), " ")
}
