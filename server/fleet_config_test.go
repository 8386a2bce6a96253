package server

import (
	"bytes"
	"encoding/base64"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A distinctive sealing key, to tell it in any message.
var (
	sealingKeyA = base64.RawURLEncoding.EncodeToString(bytes.Repeat([]byte("A"), 32))
	sealingKeyB = base64.URLEncoding.EncodeToString(bytes.Repeat([]byte("B"), 32)) // padded is fine
)

func TestParseConfigFleet(t *testing.T) {
	t.Parallel()
	cfg, err := ParseConfig([]byte(`{
		"sealingKeys": ["` + sealingKeyA + `", "` + sealingKeyB + `"],
		"limits": {
			"failedAuth": {"max": 5, "window": "2m", "keyPrefixLength": 0},
			"approvalRequests": {"max": 100, "window": "1h"},
			"trustedProxies": ["10.0.0.0/8", "192.0.2.7", "2001:db8::/32"]
		}
	}`))
	require.NoError(t, err)
	assert.Equal(t, [][]byte{bytes.Repeat([]byte("A"), 32), bytes.Repeat([]byte("B"), 32)}, cfg.SealingKeys, "in order: the first seals")
	zero := 0
	assert.Equal(t, Limits{
		FailedAuth: 5, FailedAuthWindow: 2 * time.Minute, KeyPrefixLength: &zero,
		ApprovalRequests: 100, ApprovalRequestWindow: time.Hour,
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.0.2.7/32"), netip.MustParsePrefix("2001:db8::/32")},
	}, cfg.Limits)

	cfg, err = ParseConfig([]byte(`{}`))
	require.NoError(t, err)
	assert.Empty(t, cfg.SealingKeys, "none: the store keeps one")
	assert.Equal(t, Limits{}, cfg.Limits, "zero: the defaults")

	for _, tt := range []struct{ name, doc, want string }{
		{"a key not base64url", `{"sealingKeys": ["` + strings.Repeat("*", 43) + `"]}`,
			`config: sealingKeys[0]: must be base64url of 32 random bytes (openssl rand -base64 32 | tr '+/' '-_')`},
		{"a short key", `{"sealingKeys": ["` + sealingKeyA[:20] + `"]}`,
			`config: sealingKeys[0]: must be base64url of 32 random bytes ...`},
		{"a key twice", `{"sealingKeys": ["` + sealingKeyA + `", "` + sealingKeyA + `"]}`,
			`config: sealingKeys[1]: this key is given twice`},
		{"no key", `{"sealingKeys": []}`,
			`config: sealingKeys: lists no key: leave it out to have the instances keep one in the store`},
		{"unknown limit", `{"limits": {"failedLogins": {"max": 3}}}`, `config: limits: unknown field "failedLogins"`},
		{"max zero", `{"limits": {"failedAuth": {"max": 0}}}`, `config: limits.failedAuth.max: must be at least 1`},
		{"window zero", `{"limits": {"approvalRequests": {"window": "0s"}}}`, `config: limits.approvalRequests.window: "0s" must be longer than zero`},
		{"prefix for approval requests", `{"limits": {"approvalRequests": {"keyPrefixLength": 4}}}`,
			`config: limits.approvalRequests: unknown field "keyPrefixLength"`},
		{"a proxy that is no address", `{"limits": {"trustedProxies": ["proxy.internal"]}}`,
			`config: limits.trustedProxies[0]: "proxy.internal" is neither an IP address nor a CIDR prefix (10.0.0.0/8)`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseConfig([]byte(tt.doc))
			require.Error(t, err)
			if prefix, ok := strings.CutSuffix(tt.want, "..."); ok {
				assert.True(t, strings.HasPrefix(err.Error(), prefix), "got %q", err)
			} else {
				assert.Equal(t, tt.want, err.Error())
			}
			assert.NotContains(t, err.Error(), sealingKeyA[:20], "a key is never quoted back")
		})
	}
}
