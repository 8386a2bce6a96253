package approvalpage_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// spendShown is what the Spend page shows on screen: each bar, chart and
// list of tops that is laid out with a size, within the screen's width.
type spendShown struct {
	Bars   int `json:"bars"`
	Charts int `json:"charts"`
	Tops   int `json:"tops"`
	// Outside names an element of those reaching past the screen's right.
	Outside []string `json:"outside"`
}

const measureSpend = `(() => {
  const seen = sel => [...document.querySelectorAll(sel)].filter(e => {
    const r = e.getBoundingClientRect();
    return r.width > 0 && r.height > 0;
  });
  const all = [...seen('svg.bar'), ...seen('figure.chart svg'), ...seen('.tops ol')];
  return {
    bars: seen('svg.bar').length,
    charts: seen('figure.chart svg').length,
    tops: seen('.tops ol').length,
    outside: all.filter(e => e.getBoundingClientRect().right > window.innerWidth + 0.5).map(e => e.tagName + '.' + e.getAttribute('class')),
  };
})()`

// TestSpendPageInABrowser: at 390x844 and 1280x800 the Spend page is no
// wider than the screen, and its bars, charts and tops are laid out within
// it.
func TestSpendPageInABrowser(t *testing.T) {
	ctx := browserTab(t)
	a := newSpendAPI(t)
	now := a.clock.Now().UTC()
	a.clock.Advance(time.Date(now.Year(), now.Month()+1, 1, 9, 0, 0, 0, time.UTC).Sub(now))
	a.spendHistory()

	signIn(t, ctx, a.srv.URL, patKey)
	for _, vp := range viewports {
		got := page(t, ctx, vp, a.srv.URL+"/approvals/spend", "spend-"+vp.name)
		assert.Equal(t, "Spend of your budgets", got.Heading)
		shown, err := chromedp.Run(ctx, chromedp.Evaluate[spendShown](measureSpend))
		require.NoError(t, err)
		assert.Equal(t, 3, shown.Bars, "at %s", vp.name)
		assert.Equal(t, 2, shown.Charts, "at %s", vp.name)
		assert.Equal(t, 4, shown.Tops, "at %s", vp.name)
		assert.Empty(t, shown.Outside, "at %s", vp.name)
	}
}
