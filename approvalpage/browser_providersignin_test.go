package approvalpage_test

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestProviderSignInInChromium: in a real browser, whose SameSite rules
// apply (the gateway at localhost and the provider at 127.0.0.1 are two
// sites), a person opens a request, signs in through the provider's login
// form, lands back on the request signed in as pat, approves it, and signs
// out.
func TestProviderSignInInChromium(t *testing.T) {
	ctx := browserTab(t)
	p := newProviderAPI(t)
	_, req := p.askApproval(agentKey, "echo", `{"v":"hi"}`)
	id := req["id"].(string)

	require.NoError(t, chromedp.Do(ctx,
		chromedp.EmulateViewport(390, 844),
		chromedp.Navigate(p.base+"/approvals/"+id),
		chromedp.Click(chromedp.CSS("p.provider a")),
		chromedp.WaitVisible(chromedp.ID("username")),
		chromedp.SendKeys(chromedp.ID("username"), "pat-person"),
		chromedp.SendKeys(chromedp.ID("password"), "pw-pat"),
		chromedp.Submit(chromedp.ID("password")),
		chromedp.WaitVisible(chromedp.CSS("form.decide")),
	))
	who, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("form.signout strong")))
	require.NoError(t, err)
	location, err := chromedp.Run(ctx, chromedp.Location())
	require.NoError(t, err)
	assert.Equal(t, "pat", who)
	assert.Equal(t, p.base+"/approvals/"+id, location, "back on the request the person opened")

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS("button.approve")),
		chromedp.WaitVisible(chromedp.CSS(".state.approved")),
	))
	assert.Equal(t, "approved", p.requestStatus(id))

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS("form.signout button")),
		chromedp.WaitVisible(chromedp.ID("key")),
		chromedp.Navigate(p.base+"/approvals/"+id),
		chromedp.WaitVisible(chromedp.ID("key")),
	))
}
