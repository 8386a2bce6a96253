package server

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/toolgatetype"
)

// TestBlockedPaidManifestToolNamesTheTrustThatUnblocksIt: a paid manifest
// tool whose provider the operator has not vouched for is tool_blocked,
// and the refusal names the config's trust field and the value that
// unblocks it; pasting exactly that into the config makes it callable.
func TestBlockedPaidManifestToolNamesTheTrustThatUnblocksIt(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("../examples/tools", "air-quality.json"))
	require.NoError(t, err)
	var manifest map[string]any
	require.NoError(t, json.Unmarshal(b, &manifest))
	manifest["pricing"] = map[string]any{"type": "per_call", "amount": "0.0500"}
	dir := t.TempDir()
	writeManifest(t, dir, "tools/air-quality.json", manifest)
	config := map[string]any{"builtinTools": false, "tools": []string{"tools/*.json"},
		"upstreams": map[string]string{"air-quality": "http://127.0.0.1:1"}} // nothing listens: no network

	blocked := callOf(t, writeManifest(t, dir, "blocked.json", config), "air-quality")
	require.NotNil(t, blocked)
	assert.Equal(t, toolgatetype.CodeToolBlocked, blocked.Code)
	assert.Contains(t, blocked.Message, toolgatetype.ReasonPaymentNotVerified)
	hint := regexp.MustCompile(`"trust": (\{.*\}\})`).FindStringSubmatch(blocked.Message)
	require.NotNil(t, hint, "the message names the trust field: %s", blocked.Message)
	assert.Equal(t, `{"air-quality": {"paymentVerified": true, "endpointVerified": true}}`, hint[1])

	var trust any
	require.NoError(t, json.Unmarshal([]byte(hint[1]), &trust), "the value is JSON to paste")
	config["trust"] = trust
	assert.Nil(t, callOf(t, writeManifest(t, dir, "trusted.json", config), "air-quality"), "what the message says unblocks it")
}

// callOf loads the config at path as the server does, quotes slug and
// calls it with its quote's digest approved, and returns the refusal, nil
// when the call was admitted (the provider is not reached: its answer
// does not matter here).
func callOf(t *testing.T, path, slug string) *toolgatetype.Error {
	t.Helper()
	cfg, err := LoadConfig(path)
	require.NoError(t, err)
	ctx := context.Background()
	srv, err := New(ctx, cfg, nil)
	require.NoError(t, err)
	defer srv.Close()
	gw := srv.Gateway()
	q, err := gw.Quote(ctx, "alice", slug)
	require.NoError(t, err)
	digest := ""
	if q.Quote.ManifestDigest != nil {
		digest = *q.Quote.ManifestDigest
	}
	_, err = gw.Call(ctx, "alice", toolgatetype.CallRequest{Tool: slug, QuoteID: q.Quote.ID,
		Input: json.RawMessage(`{"latitude": 52.52, "longitude": 13.41}`), ApprovalDigest: digest, IdempotencyKey: "k-" + strings.TrimSuffix(filepath.Base(path), ".json")})
	var te *toolgatetype.Error
	if err != nil {
		require.ErrorAs(t, err, &te)
	}
	return te
}

// writeManifest writes doc as JSON to dir/name.
func writeManifest(t *testing.T, dir, name string, doc any) string {
	t.Helper()
	data, err := json.MarshalIndent(doc, "", "  ")
	require.NoError(t, err)
	path := filepath.Join(dir, name)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, data, 0o600))
	return path
}
