package apikey_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolgate/toolgate/apikey"
)

func TestKeyStoreKeepsCallerAndApproverKeysApart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	keys := apikey.NewKeyStore()
	require.NoError(t, keys.AddKey("agent", "k-caller"))
	require.NoError(t, keys.AddApproverKey("pat", "k-approver"))
	require.NoError(t, keys.AddApproverKeyDigest("sam", "sha256:"+strings.Repeat("ab", 32)))

	assert.ErrorIs(t, keys.AddApproverKey("pat", "k-caller"), apikey.ErrKeyTaken, "a caller key cannot also be an approver key")
	assert.ErrorIs(t, keys.AddKey("agent", "k-approver"), apikey.ErrKeyTaken, "nor the other way round")
	assert.ErrorIs(t, keys.AddKeyDigest("agent", strings.Repeat("ab", 32)), apikey.ErrKeyTaken)
	assert.NoError(t, keys.AddApproverKey("pat", "k-approver"), "adding a key again to its owner is fine")

	for _, c := range []struct {
		key              string
		caller, approver string
	}{
		{"k-caller", "agent", ""},
		{"k-approver", "", "pat"},
		{"k-unknown", "", ""},
	} {
		p, ok := keys.Authenticate(ctx, c.key)
		assert.Equal(t, c.caller != "", ok, c.key)
		assert.Equal(t, c.caller, p, c.key)
		ap, ok := keys.AuthenticateApprover(ctx, c.key)
		assert.Equal(t, c.approver != "", ok, c.key)
		assert.Equal(t, c.approver, ap, c.key)
	}
}

func TestBearerToken(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		header []string
		key    string
	}{
		{"Bearer", []string{"Bearer tg_key"}, "tg_key"},
		{"AnyCaseAndSpacesAround", []string{"bearer   tg_key "}, "tg_key"},
		{"None", nil, ""},
		{"Repeated", []string{"Bearer tg_key", "Bearer tg_key"}, ""},
		{"AnotherScheme", []string{"Basic tg_key"}, ""},
		{"NoKey", []string{"Bearer "}, ""},
		{"TwoWords", []string{"Bearer tg_key extra"}, ""},
		{"ATab", []string{"Bearer tg\tkey"}, ""},
		{"LongestAccepted", []string{"Bearer " + strings.Repeat("k", apikey.MaxLength)}, strings.Repeat("k", apikey.MaxLength)},
		{"TooLong", []string{"Bearer " + strings.Repeat("k", apikey.MaxLength+1)}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.Header["Authorization"] = c.header
			key, ok := apikey.BearerToken(r)
			assert.Equal(t, c.key != "", ok)
			assert.Equal(t, c.key, key)
		})
	}
}
