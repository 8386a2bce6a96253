package upstream

import (
	"net/url"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// Remembered or not, an origin answers as url.Parse of it would: the same
// scheme and host, in any case; one that does not parse matches nothing.
// Past maxOrigins it starts afresh rather than growing.
func TestOriginsAnswerAsParsing(t *testing.T) {
	t.Parallel()
	var o origins
	target, err := url.Parse("http://Mirror.Internal:8080/fdsnws/event/1/query?x=1")
	require.NoError(t, err)
	cases := []struct {
		origin string
		same   bool
	}{
		{"http://mirror.internal:8080", true},
		{"HTTP://MIRROR.INTERNAL:8080/", true},
		{"https://mirror.internal:8080", false},
		{"http://mirror.internal", false},
		{"http://mirror.internal:8080\x7f", false}, // does not parse
		{"", false},
	}
	for range 2 { // parsed, then remembered
		for _, c := range cases {
			require.Equal(t, c.same, o.same(target, c.origin), "%q", c.origin)
		}
	}
	for i := range maxOrigins + 10 {
		o.same(target, "http://h"+strconv.Itoa(i))
	}
	require.LessOrEqual(t, len(o.parsed), maxOrigins)
	require.True(t, o.same(target, "http://mirror.internal:8080"))
}
