package approvalpage

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRelativeTimes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{30 * time.Second, "in less than a minute"},
		{-30 * time.Second, "just now"},
		{4*time.Minute + 59*time.Second, "in 4 min"},
		{-12 * time.Minute, "12 min ago"},
		{59 * time.Minute, "in 59 min"},
		{time.Hour, "in 1 h"},
		{-(2*time.Hour + 5*time.Minute), "2 h 5 min ago"},
		{72 * time.Hour, "in 3 days"},
	} {
		assert.Equal(t, c.want, relative(c.d), "%s", c.d)
	}
	now := time.Date(2030, 3, 15, 12, 0, 0, 0, time.UTC)
	assert.Equal(t, timeView{Rel: "in 30 min", UTC: "2030-03-15 12:30:00 UTC", ISO: "2030-03-15T12:30:00Z"}, when(now.Add(30*time.Minute), now))
}

// TestApprovedUntilReadsInEveryForm: "the call may run until" is followed
// by a time it can be followed by, whatever the relative time says.
func TestApprovedUntilReadsInEveryForm(t *testing.T) {
	t.Parallel()
	now := time.Date(2030, 3, 15, 12, 0, 0, 0, time.UTC)
	tag := regexp.MustCompile(`<[^>]*>`)
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{29 * time.Minute, "the call may run until 2030-03-15 12:29:00 UTC (in 29 min)"},
		{30 * time.Second, "the call may run until 2030-03-15 12:00:30 UTC (in less than a minute)"},
		{2*time.Hour + 5*time.Minute, "the call may run until 2030-03-15 14:05:00 UTC (in 2 h 5 min)"},
		{72 * time.Hour, "the call may run until 2030-03-18 12:00:00 UTC (in 3 days)"},
		{-30 * time.Second, "the call may run until 2030-03-15 11:59:30 UTC (just now)"},
		{-4 * time.Minute, "the call may run until 2030-03-15 11:56:00 UTC (4 min ago)"},
	} {
		var b strings.Builder
		require.NoError(t, approvalTemplate.ExecuteTemplate(&b, "until", when(now.Add(c.d), now)))
		assert.Equal(t, c.want, "the call may run until "+tag.ReplaceAllString(b.String(), ""), "%s", c.d)
	}
}
