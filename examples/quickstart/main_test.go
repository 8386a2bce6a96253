package main

import (
	"bytes"
	"context"
	"net/http"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// offlineOnly fails any request that would leave the process, proving the
// quickstart needs no network.
type offlineOnly struct{}

func (offlineOnly) RoundTrip(req *http.Request) (*http.Response, error) {
	panic("quickstart tried to reach the network: " + req.URL.String())
}

func TestQuickstartCompletesAndReplaysOffline(t *testing.T) {
	saved := http.DefaultTransport
	http.DefaultTransport = offlineOnly{}
	defer func() { http.DefaultTransport = saved }()

	var out bytes.Buffer
	require.NoError(t, run(context.Background(), &out))
	text := out.String()
	assert.Regexp(t, `execution [0-9a-f-]{36}: status=completed cost=\$0\.0000`, text)
	assert.Contains(t, text, "replayed=true")
	assert.Contains(t, text, "identical bytes=true")
	assert.Contains(t, text, "idempotency_key_reused")

	ids := regexp.MustCompile(`execution ([0-9a-f-]{36})`).FindAllStringSubmatch(text, -1)
	require.Len(t, ids, 2)
	assert.Equal(t, ids[0][1], ids[1][1], "the replay is the same execution")
}
