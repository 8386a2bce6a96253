package recorded_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/tools/recorded"
)

// answer is what the recorded transport answered a GET.
type answer struct {
	status int
	header http.Header
	body   []byte
}

func get(t *testing.T, target string) answer {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, target, nil)
	require.NoError(t, err)
	resp, err := recorded.Transport().RoundTrip(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return answer{resp.StatusCode, resp.Header, body}
}

// decode parses the answer's JSON body into v.
func (a answer) decode(t *testing.T, v any) {
	t.Helper()
	require.NoError(t, json.Unmarshal(a.body, v), "%s", a.body)
}

// sameBody reports whether a body is a recording's, the file's final
// newline aside.
func sameBody(recording string, body []byte) bool {
	return bytes.Equal(bytes.TrimSpace(recorded.Body(recording)), bytes.TrimSpace(body))
}
