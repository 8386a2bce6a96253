package main

import (
	"bytes"
	"context"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolgate/toolgate/toolgatetest"
)

func TestQuickstartCompletesAndReplaysOffline(t *testing.T) {
	// The gateway's transport is an in-process fake that answers like the
	// providers and counts what reaches it: the one call the quickstart
	// makes goes through it (so nothing else carried it over the network),
	// and the replay reaches nothing.
	providers := toolgatetest.NewUpstream()
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), &out, providers))
	providers.RequireCalls(t, 1)
	assert.Equal(t, "earthquake.usgs.gov", providers.Requests()[0].URL.Host)
	text := out.String()
	assert.Regexp(t, `execution [0-9a-f-]{36}: status=completed cost=\$0\.0000`, text)
	assert.Contains(t, text, "replayed=true")
	assert.Contains(t, text, "identical bytes=true")
	assert.Contains(t, text, "idempotency_key_reused")

	ids := regexp.MustCompile(`execution ([0-9a-f-]{36})`).FindAllStringSubmatch(text, -1)
	require.Len(t, ids, 2)
	assert.Equal(t, ids[0][1], ids[1][1], "the replay is the same execution")
}
