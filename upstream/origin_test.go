package upstream_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/upstream"
)

func TestAnOriginTransportSendsToItsOriginOnly(t *testing.T) {
	var other atomic.Int32
	elsewhere := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { other.Add(1) }))
	defer elsewhere.Close()
	named := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	defer named.Close()

	rt, err := upstream.NewOriginTransport(named.URL, nil)
	require.NoError(t, err)
	client := &http.Client{Transport: rt}

	resp, err := client.Get(named.URL + "/mcp")
	require.NoError(t, err, "a loopback origin the operator named may be dialled")
	resp.Body.Close()
	require.Equal(t, http.StatusNoContent, resp.StatusCode)

	_, err = client.Get(elsewhere.URL + "/mcp")
	require.True(t, errors.Is(err, upstream.ErrOtherOrigin), "%v", err)
	require.Zero(t, other.Load(), "nothing reached another origin")

	// Through the default transport, anything else internal stays refused.
	plain := &http.Client{Transport: upstream.NewTransport()}
	_, err = plain.Get(named.URL)
	require.ErrorIs(t, err, upstream.ErrDestinationRefused)

	for _, bad := range []string{"ftp://x", "https://", "https://h/path", "https://u:p@h", "https://h?q"} {
		_, err := upstream.NewOriginTransport(bad, nil)
		require.Error(t, err, bad)
	}
}
