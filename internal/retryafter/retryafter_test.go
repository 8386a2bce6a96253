package retryafter

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestParse(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		v    string
		want time.Duration
		ok   bool
	}{
		{"0", 0, true},
		{"1", time.Second, true},
		{"120", 2 * time.Minute, true},
		{"0003", 3 * time.Second, true},
		{"1073741824", 1 << 30 * time.Second, true},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second, true},
		{now.Add(time.Hour).Format(time.RFC850), time.Hour, true},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0, true}, // passed: no wait
		{now.Format(time.ANSIC), 0, true},

		{"", 0, false},
		{"-1", 0, false},
		{"+5", 0, false},
		{" 5", 0, false},
		{"5 ", 0, false},
		{"1.5", 0, false},
		{"5s", 0, false},
		{"1073741825", 0, false},
		{"9999999999", 0, false},           // would overflow a Duration
		{"99999999999999999999", 0, false}, // and an int
		{"soon", 0, false},
		{"2026-03-14T12:00:00Z", 0, false}, // not an HTTP date
	} {
		got, ok := Parse(tc.v, now)
		assert.Equal(t, tc.ok, ok, "%q", tc.v)
		assert.Equal(t, tc.want, got, "%q", tc.v)
	}
}
