package secrettest

import (
	"fmt"
	"testing"
)

// recorder is a testing.TB that keeps its failures instead of failing.
type recorder struct {
	testing.TB
	failures []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}

func TestAssertNoRunSeesEveryReading(t *testing.T) {
	t.Parallel()
	const secret = "sk_live_0123456789abcdef"
	for _, c := range []struct {
		text  string
		shown bool
	}{
		{"nothing here", false},
		{"whole: " + secret, true},
		{"cut: sk_live_01", true},
		{"split: sk_\u200blive_0123", true},
		{`{"m": "sk_\u005flive_0123"}`, true}, // an escape in JSON
		{`{"sk_live_01": 1}`, true},           // a member name
		{"sk_live", false},                    // 7 characters
	} {
		r := &recorder{TB: t}
		AssertNoRun(r, c.text, secret, "text")
		if got := len(r.failures) > 0; got != c.shown {
			t.Errorf("AssertNoRun(%q) failed = %v, want %v", c.text, got, c.shown)
		}
	}
}
