package approvalpage_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// summaryField is one field of the input's summary as the browser lays it out.
type summaryField struct {
	Text   string  `json:"text"`
	Top    float64 `json:"top"`
	Bottom float64 `json:"bottom"`
	Left   float64 `json:"left"`
	Right  float64 `json:"right"`
}

// pageText is what a person reads on the page, and where the summary's
// fields are.
type pageText struct {
	Visible string         `json:"visible"`
	Count   string         `json:"count"`
	Fields  []summaryField `json:"fields"`
}

const readText = `(() => ({
  visible: document.body.innerText,
  count: (document.querySelector('dd.summary .muted') || {}).textContent || '',
  fields: [...document.querySelectorAll('dd.summary .field')].map(f => {
    const r = f.getBoundingClientRect();
    return {text: f.textContent, top: r.top, bottom: r.bottom, left: r.left, right: r.right};
  }),
}))()`

// TestApprovalPageTextInABrowser: what the person reads is what runs. A
// right-to-left override in the input is read as its escape, never
// obeyed; and a 5,000-character content cannot push the path a file write
// overwrites off the first screen, at 390x844 or at 1280x800.
func TestApprovalPageTextInABrowser(t *testing.T) {
	ctx := browserTab(t)
	a := bidiAPI(t)
	_, bidi := a.askApproval(agentKey, "echo", `{"to":"moc.live@`+rlo+`kcatta"}`)
	long, err := json.Marshal(map[string]string{"content": strings.Repeat("All work and no play. ", 5000/22+1)[:5000], "path": "/etc/passwd"})
	require.NoError(t, err)
	_, write := a.askApproval(agentKey, "echo", string(long))

	signIn(t, ctx, a.srv.URL, patKey)
	for _, vp := range viewports {
		page(t, ctx, vp, a.srv.URL+"/approvals/"+bidi["id"].(string), "request-bidi-"+vp.name)
		got, err := chromedp.Run(ctx, chromedp.Evaluate[pageText](readText))
		require.NoError(t, err)
		assert.NotContains(t, got.Visible, rlo, "at %s the page obeys no override", vp.name)
		assert.Contains(t, got.Visible, `"moc.live@\u202Ekcatta"`, "at %s the override is read as its escape, in the summary and in the full input", vp.name)
		assert.Equal(t, 2, strings.Count(got.Visible, `moc.live@\u202Ekcatta`), "at %s: summary and full input", vp.name)
		assert.NotContains(t, got.Visible, "attack@evil.com")

		lay := page(t, ctx, vp, a.srv.URL+"/approvals/"+write["id"].(string), "request-write-"+vp.name)
		got, err = chromedp.Run(ctx, chromedp.Evaluate[pageText](readText))
		require.NoError(t, err)
		assert.Equal(t, "2 fields", got.Count)
		require.Len(t, got.Fields, 2, "at %s every field is in the summary", vp.name)
		path := got.Fields[0]
		assert.Equal(t, `path: "/etc/passwd"`, path.Text, "at %s the short field comes first, whole", vp.name)
		assert.GreaterOrEqual(t, path.Top, 0.0)
		assert.LessOrEqual(t, path.Bottom, lay.InnerHeight, "at %s the path is on the first screen", vp.name)
		assert.GreaterOrEqual(t, path.Left, 0.0)
		assert.LessOrEqual(t, path.Right, lay.InnerWidth, "at %s the path is within the width", vp.name)
		assert.True(t, strings.HasPrefix(got.Fields[1].Text, `content: "All work`), got.Fields[1].Text)
		for _, b := range lay.Buttons {
			if b.Text == "Approve" || b.Text == "Deny" {
				assert.LessOrEqual(t, b.Bottom, lay.InnerHeight, "%s is on the first screen at %s", b.Text, vp.name)
			}
		}
	}
}
