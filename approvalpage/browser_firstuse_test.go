package approvalpage_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// firstUseChoice is what the test reads of a first_use request's page: the
// remember choice checked, and where the choice and the sentence saying
// what it means are.
type firstUseChoice struct {
	Checked      string  `json:"checked"`
	ChoiceText   string  `json:"choiceText"`
	ChoiceBottom float64 `json:"choiceBottom"`
	Means        string  `json:"means"`
	MeansBottom  float64 `json:"meansBottom"`
	InnerHeight  float64 `json:"innerHeight"`
}

// readFirstUseChoice is evaluated in the page.
const readFirstUseChoice = `(() => {
  const checked = document.querySelector('input[name=remember]:checked');
  const label = checked ? checked.closest('label') : null;
  const means = document.getElementById('first-use-means');
  return {
    checked: checked ? checked.value : '',
    choiceText: label ? label.textContent.trim() : '',
    choiceBottom: label ? label.getBoundingClientRect().bottom : 1e9,
    means: means ? means.textContent.trim() : '',
    meansBottom: means ? means.getBoundingClientRect().bottom : 1e9,
    innerHeight: window.innerHeight,
  };
})()`

// TestFirstUseChoiceInABrowser: on a phone, the page of a first_use tool's
// request shows "don't ask again for this version" preselected, and what
// it means for the caller, on the first screen; a person who switches to
// "this call only" and approves gets a request that reads remember
// "once", and one who keeps the choice gets "first_use".
func TestFirstUseChoiceInABrowser(t *testing.T) {
	ctx := browserTab(t)
	a := browserAPI(t)
	_, once := a.askApproval(agentKey, "goal-data", goal(1))
	_, kept := a.askApproval(agentKey, "goal-data", goal(2))
	base := a.srv.URL
	signIn(t, ctx, base, patKey)

	phone := viewports[0]
	require.Equal(t, int64(390), phone.width)
	require.Equal(t, int64(844), phone.height)
	for _, id := range []string{once["id"].(string), kept["id"].(string)} {
		got := page(t, ctx, phone, base+"/approvals/"+id, "request-first-use-"+phone.name)
		for _, b := range got.Buttons {
			if b.Text == "Approve" || b.Text == "Deny" {
				assert.LessOrEqual(t, b.Bottom, got.InnerHeight, "%s is on the first screen", b.Text)
			}
		}
		choice, err := chromedp.Run(ctx, chromedp.Evaluate[firstUseChoice](readFirstUseChoice))
		require.NoError(t, err)
		assert.Equal(t, "first_use", choice.Checked, "don't ask again for this version is preselected")
		assert.Equal(t, "Don't ask again for this version", choice.ChoiceText)
		assert.Equal(t, "Later calls of this version by agent will not ask. A new version asks again.", choice.Means)
		assert.LessOrEqual(t, choice.ChoiceBottom, choice.InnerHeight, "the choice is on the first screen")
		assert.LessOrEqual(t, choice.MeansBottom, choice.InnerHeight, "what it means is on the first screen")
	}

	// This call only, chosen on the page.
	approve := func(id string, pick ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		steps := []chromedp.Action[chromedp.Void]{
			chromedp.Navigate(base + "/approvals/" + id),
			chromedp.WaitReady(chromedp.CSS("form.decide")),
		}
		steps = append(steps, pick...)
		steps = append(steps,
			chromedp.Click(chromedp.CSS(`button[name=decision][value=approve]`)),
			chromedp.WaitVisible(chromedp.CSS("p.state.approved")),
		)
		require.NoError(t, chromedp.Do(ctx, steps...))
	}
	approve(once["id"].(string), chromedp.Click(chromedp.CSS(`input[name=remember][value=once]`)))
	// The preselected choice, kept.
	approve(kept["id"].(string))

	for id, want := range map[string]string{once["id"].(string): "once", kept["id"].(string): "first_use"} {
		r := a.do(http.MethodGet, "/v1/approval-requests/"+id, agentKey, "")
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		assert.Equal(t, "approved", r.json(t)["status"])
		assert.Equal(t, want, r.json(t)["remember"], "what the person chose is what was recorded")
		assert.True(t, strings.Contains(string(r.body), `"remember":"`+want+`"`))
	}
}
