package readsized

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// ReadAll gives what io.ReadAll gives whatever length a body declared:
// right, too short, too long, none, or beyond the cap.
func TestReadAllAsIoReadAll(t *testing.T) {
	t.Parallel()
	body := strings.Repeat("x", 700)
	for _, length := range []int64{700, 0, 1, 699, 701, 5000, -1, 2000} {
		got, err := ReadAll(strings.NewReader(body), length, 1000)
		require.NoError(t, err, "declared %d", length)
		require.Equal(t, body, string(got), "declared %d", length)
	}
	got, err := ReadAll(bytes.NewReader(nil), 0, 1000)
	require.NoError(t, err)
	require.Empty(t, got)

	// A read error comes back with what was read before it.
	boom := errors.New("cut")
	got, err = ReadAll(io.MultiReader(strings.NewReader("abc"), errReader{boom}), 10, 1000)
	require.ErrorIs(t, err, boom)
	require.Equal(t, "abc", string(got))
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }
