package approvalpage_test

// The approval pages in a real browser: headless Chromium, driven with
// github.com/chromedp/chromedp. chromedp is the maintained Go driver of
// the Chrome DevTools Protocol: the test stays in Go, with no Node
// toolchain and no WebDriver server, and measures what only a browser
// knows (layout, wrapping, what fits on the first screen). Debian packages
// Chromium; .ci/chromium.sh installs it for CI.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/apikey"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/toolgatehttp"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"
)

// screenshotsEnv names a directory to write the pages' screenshots to, as
// the README shows them: TOOLGATE_SCREENSHOTS=docs/screenshots.
const screenshotsEnv = "TOOLGATE_SCREENSHOTS"

// viewport is a screen the pages must suit.
type viewport struct {
	name          string
	width, height int64
	mobile        bool
}

var viewports = []viewport{
	{"phone", 390, 844, true},
	{"desktop", 1280, 800, false},
}

// findChromium returns the browser to drive. Without one the test fails
// under CI, which must install it, and is skipped elsewhere.
func findChromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no Chromium to drive: CI must install it (bash .ci/chromium.sh runs apt-get install chromium)")
	}
	t.Skip("no Chromium installed (apt-get install chromium); the browser test is skipped")
	return ""
}

// browserTab starts headless Chromium and returns a tab, closed with the test.
func browserTab(t *testing.T) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(findChromium(t)),
		chromedp.NoSandbox, // CI runs as root, where Chromium's sandbox cannot start
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("font-render-hinting", "none"),
	)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(alloc)
	ctx, cancelTimeout := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(func() { cancelTimeout(); cancelCtx(); cancelAlloc() })
	require.NoError(t, chromedp.Do(ctx), "start Chromium")
	return ctx
}

// layout is what the test measures of a page.
type layout struct {
	ScrollWidth  float64  `json:"scrollWidth"`
	InnerWidth   float64  `json:"innerWidth"`
	InnerHeight  float64  `json:"innerHeight"`
	Heading      string   `json:"heading"`
	Buttons      []button `json:"buttons"`
	WidestOffset float64  `json:"widestOffset"`
	Widest       string   `json:"widest"`
}

type button struct {
	Text   string  `json:"text"`
	Bottom float64 `json:"bottom"`
	Right  float64 `json:"right"`
}

// measure is evaluated in the page: its width against the viewport's, its
// heading, where its buttons are, and the element reaching furthest right,
// to name the culprit when the page is too wide.
const measure = `(() => {
  const widest = [...document.querySelectorAll('body *')].reduce((w, e) => {
    const r = e.getBoundingClientRect();
    return r.right > w.right ? {right: r.right, what: e.tagName + '.' + e.className} : w;
  }, {right: 0, what: ''});
  return {
    scrollWidth: document.documentElement.scrollWidth,
    innerWidth: window.innerWidth,
    innerHeight: window.innerHeight,
    heading: (document.querySelector('h1') || {}).textContent || '',
    buttons: [...document.querySelectorAll('button')].map(b => {
      const r = b.getBoundingClientRect();
      return {text: b.textContent.trim(), bottom: r.bottom, right: r.right};
    }),
    widestOffset: widest.right,
    widest: widest.what,
  };
})()`

// page opens url at vp, measures it and, when asked to, saves what the
// first screen shows as name.png.
func page(t *testing.T, ctx context.Context, vp viewport, url, name string) layout {
	t.Helper()
	opts := []chromedp.EmulateViewportOption{}
	if vp.mobile {
		opts = append(opts, chromedp.EmulateMobile, chromedp.EmulatePortrait)
	}
	require.NoError(t, chromedp.Do(ctx,
		chromedp.EmulateViewport(vp.width, vp.height, opts...),
		chromedp.Navigate(url),
		chromedp.WaitReady(chromedp.CSS("body")),
	), "%s at %s", url, vp.name)
	got, err := chromedp.Run(ctx, chromedp.Evaluate[layout](measure))
	require.NoError(t, err, "%s at %s", url, vp.name)
	if dir := os.Getenv(screenshotsEnv); dir != "" && name != "" {
		shot, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(dir, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name+".png"), shot, 0o644))
	}
	assert.LessOrEqual(t, got.ScrollWidth, got.InnerWidth, "%s at %s is wider than the screen: %s reaches %v", name, vp.name, got.Widest, got.WidestOffset)
	return got
}

// signIn signs the browser in as an approver, through the sign-in form.
func signIn(t *testing.T, ctx context.Context, base, key string) {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx,
		chromedp.EmulateViewport(1280, 800),
		chromedp.Navigate(base+"/approvals"),
		chromedp.SendKeys(chromedp.ID("key"), key),
		chromedp.Submit(chromedp.ID("key")),
		chromedp.WaitVisible(chromedp.CSS("form.signout")),
	))
}

// longPrincipal is a caller id of 100 characters with nowhere to break.
var longPrincipal = "agent-" + strings.Repeat("x", 94)

// longSlug is the longest slug the registry takes, 64 characters.
var longSlug = "tool-" + strings.Repeat("y", 58) + "z"

// longTool is a paid tool with the longest slug and a 100-character name.
func longTool() *registry.Tool {
	t := toolgatetest.Priced(toolgatetest.EchoTool(), "0.2500")
	t.Slug = longSlug
	t.Name = "Tool" + strings.Repeat("N", 96)
	return t
}

// browserAPI serves a gateway in approver mode for agent and for a
// principal with a 100-character id, with pat approving for both.
func browserAPI(t *testing.T) *api {
	t.Helper()
	cfg := &toolgate.Config{Approvers: toolgatetype.StaticApprovers{
		Modes:     map[string]toolgatetype.ApprovalMode{"agent": toolgatetype.ApprovalModeApprover, longPrincipal: toolgatetype.ApprovalModeApprover},
		Approvers: map[string][]string{"pat": {"agent", longPrincipal}},
	}}
	tg := toolgatetest.New(t, &toolgatetest.Options{Config: cfg})
	require.NoError(t, tg.Registry.SetTrust("goal-data", registry.Trust{PaymentVerified: registry.Bool(true)}))
	require.NoError(t, tg.Registry.Register(longTool()))
	require.NoError(t, tg.Registry.SetTrust(longSlug, registry.Trust{PaymentVerified: registry.Bool(true), EndpointVerified: registry.Bool(true)}))
	keys := apikey.NewKeyStore()
	require.NoError(t, keys.AddKey("agent", agentKey))
	require.NoError(t, keys.AddKey(longPrincipal, "tg_test_long_principal"))
	require.NoError(t, keys.AddApproverKey("pat", patKey))
	a := &api{t: t, gw: tg.Gateway, keys: keys, clock: tg.Clock}
	// The 5 KB input needs a body larger than serve's.
	a.srv = httptest.NewServer(toolgatehttp.NewHandler(a.gw, &toolgatehttp.Options{Authenticator: keys, MaxBodyBytes: 64 << 10}))
	t.Cleanup(a.srv.Close)
	return a
}

// goal is a goal-data input for step.
func goal(step int) string { return fmt.Sprintf(`{"goal":"reach the summit","step":%d}`, step) }

// TestApprovalPagesInABrowser: at 390x844 and 1280x800, every page is no
// wider than the screen, even with a 5 KB input, a 100-character caller
// and name and the longest slug; a pending request shows its decision and
// both buttons on the first screen; a decided or expired one asks nothing.
func TestApprovalPagesInABrowser(t *testing.T) {
	ctx := browserTab(t)
	a := browserAPI(t)

	// One request expires before the others are made.
	_, expired := a.askApproval(agentKey, "goal-data", goal(5))
	a.clock.Advance(toolgate.DefaultApprovalTTL + 2*time.Minute)

	_, pending := a.askApproval(agentKey, "goal-data", goal(1))
	_, approved := a.askApproval(agentKey, "goal-data", goal(2))
	_, denied := a.askApproval(agentKey, "goal-data", goal(3))
	usedQuote, used := a.askApproval(agentKey, "goal-data", goal(4))
	a.clock.Advance(3 * time.Minute)
	for id, route := range map[string]string{approved["id"].(string): "approve", denied["id"].(string): "deny", used["id"].(string): "approve"} {
		r := a.do("POST", "/v1/approval-requests/"+id+"/"+route, patKey, "")
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	}
	a.clock.Advance(2 * time.Minute)
	r := a.call(agentKey, "goal-data", "k-used", usedQuote, goal(4), used["id"].(string))
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)

	base := a.srv.URL
	signIn(t, ctx, base, patKey)
	for _, vp := range viewports {
		page(t, ctx, vp, base+"/approvals", "list-"+vp.name)
	}

	// A request with a 5 KB input, a 100-character caller and name, and
	// the longest slug: the pages must wrap them, not widen.
	bigInput, err := json.Marshal(map[string]string{"v": strings.Repeat("0123456789abcdef", 5*1024/16)})
	require.NoError(t, err)
	_, big := a.askApproval("tg_test_long_principal", longSlug, string(bigInput))
	pages := []struct {
		name, id, state, heading string
	}{
		{"pending", pending["id"].(string), "pending", "Approve a call of Goal Data?"},
		{"long", big["id"].(string), "pending", "Approve a call of " + longTool().Name[:39] + "…?"},
		{"approved", approved["id"].(string), "approved", "Approved: a call of Goal Data"},
		{"denied", denied["id"].(string), "denied", "Denied: a call of Goal Data"},
		{"expired", expired["id"].(string), "expired", "Expired: a call of Goal Data"},
		{"used", used["id"].(string), "used", "Used: the approved call of Goal Data ran"},
	}
	for _, vp := range viewports {
		for _, p := range pages {
			got := page(t, ctx, vp, base+"/approvals/"+p.id, "request-"+p.name+"-"+vp.name)
			assert.Equal(t, p.heading, strings.TrimSpace(got.Heading), "%s at %s", p.name, vp.name)
			decisions := map[string]button{}
			for _, b := range got.Buttons {
				if b.Text == "Approve" || b.Text == "Deny" {
					decisions[b.Text] = b
				}
			}
			if p.state != "pending" {
				assert.Empty(t, decisions, "a %s request offers no decision", p.state)
				continue
			}
			require.Len(t, decisions, 2, "%s at %s: %v", p.name, vp.name, got.Buttons)
			for name, b := range decisions {
				assert.LessOrEqual(t, b.Bottom, got.InnerHeight, "%s is on the first screen of %s at %s", name, p.name, vp.name)
				assert.LessOrEqual(t, b.Right, got.InnerWidth, "%s is within the width of %s at %s", name, p.name, vp.name)
			}
		}
		page(t, ctx, vp, base+"/approvals", "list-long-"+vp.name)
	}

	// The list, with a call whose outcome is unknown and its Resolve form.
	u, _ := newAmbiguousAPI(t)
	u.askApproval(aliceKey, "echo", `{"v":"hello"}`)
	signIn(t, ctx, u.srv.URL, patKey)
	for _, vp := range viewports {
		got := page(t, ctx, vp, u.srv.URL+"/approvals", "list-unknown-"+vp.name)
		var resolve []string
		for _, b := range got.Buttons {
			if strings.HasPrefix(b.Text, "It ") {
				resolve = append(resolve, b.Text)
				assert.LessOrEqual(t, b.Right, got.InnerWidth, "%s at %s", b.Text, vp.name)
			}
		}
		assert.Equal(t, []string{"It ran: charge it", "It did not run: release it"}, resolve)
	}
}
