package approvalpage

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
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
