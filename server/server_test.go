package server

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestServeInProcess: an embedder's server answers on its listener, serves
// metrics on another when the config asks, and stops cleanly when its
// context is done; Close after it releases the rest.
func TestServeInProcess(t *testing.T) {
	t.Parallel()
	cfg, err := ParseConfig([]byte(`{"principals": [{"id": "alice", "apiKeys": ["tg_test_serve_alice"]}],
		"metricsListen": "127.0.0.1:0"}`))
	require.NoError(t, err)
	srv, err := New(t.Context(), cfg, &Options{Offline: true, Getenv: func(string) string { return "" }})
	require.NoError(t, err)
	defer srv.Close()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	metrics, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.ServeListeners(ctx, ln, metrics) }()

	get := func(url string) (int, string) {
		resp, err := http.Get(url)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(body)
	}
	status, _ := get("http://" + ln.Addr().String() + "/healthz")
	assert.Equal(t, http.StatusOK, status)
	status, body := get("http://" + metrics.Addr().String() + "/metrics")
	assert.Equal(t, http.StatusOK, status)
	assert.True(t, strings.Contains(body, "go_goroutines"), "the process's metrics")

	stop()
	select {
	case err := <-served:
		assert.NoError(t, err, "a clean stop")
	case <-time.After(time.Minute):
		t.Fatal("Serve did not return once its context was done")
	}
}
