//go:build unix

package check

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAmbiguousAlertWatchesTheCallsWaiting: the ambiguous alert fires on
// the calls still waiting for a person, which the server exports as the
// oldest's age, and not on calls that ended ambiguous, which a person may
// have resolved since.
func TestAmbiguousAlertWatchesTheCallsWaiting(t *testing.T) {
	t.Parallel()
	for _, r := range alertRules(t) {
		if r.Alert != "ToolgateAmbiguousCalls" {
			continue
		}
		assert.Equal(t, []string{"toolgate_ambiguous_oldest_age_seconds"}, metricNames(t, r.Expr))
		return
	}
	require.Fail(t, "no ToolgateAmbiguousCalls rule")
}
