package promshare_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/promshare"
)

// Scrapes within MaxAge share one read; after it, or after a failed read,
// the store is read again.
func TestReadingIsReadOncePerMaxAge(t *testing.T) {
	t.Parallel()
	now := time.Date(2030, 3, 15, 12, 0, 0, 0, time.UTC)
	reads, fail := 0, false
	r := &promshare.Reading[int]{
		MaxAge: 10 * time.Second, Timeout: time.Second, Now: func() time.Time { return now },
		Read: func(context.Context, time.Time) (int, error) {
			reads++
			if fail {
				return 0, errors.New("store down")
			}
			return reads, nil
		},
	}
	v, _, err := r.Get()
	require.NoError(t, err)
	assert.Equal(t, 1, v)
	now = now.Add(9 * time.Second)
	v, at, err := r.Get()
	require.NoError(t, err)
	assert.Equal(t, 1, v, "fresh enough")
	assert.Equal(t, now, at, "the time of the scrape")
	now = now.Add(time.Second)
	v, _, _ = r.Get()
	assert.Equal(t, 2, v, "10 s old: read again")
	fail = true
	now = now.Add(10 * time.Second)
	_, _, err = r.Get()
	require.Error(t, err)
	fail = false
	v, _, err = r.Get()
	require.NoError(t, err)
	assert.Equal(t, 4, v, "a failed read is no reading")
}
