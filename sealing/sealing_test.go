package sealing_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/sealing"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/storage/memory"
)

func key(b byte) []byte { return bytes.Repeat([]byte{b}, sealing.KeySize) }

func TestSealOpen(t *testing.T) {
	t.Parallel()
	k, err := sealing.New(key(1))
	require.NoError(t, err)
	ad := []byte("principal=alice")
	sealed := k.Seal([]byte("state"), ad)
	assert.NotContains(t, string(sealed), "state", "a sealed value cannot be read")
	assert.NotEqual(t, sealed, k.Seal([]byte("state"), ad), "each seal draws its own nonce")

	got, err := k.Open(sealed, ad)
	require.NoError(t, err)
	assert.Equal(t, "state", string(got))

	_, err = k.Open(sealed, []byte("principal=bob"))
	assert.ErrorIs(t, err, sealing.ErrOpen, "bound to its additional data")
	for i := range sealed {
		altered := bytes.Clone(sealed)
		altered[i] ^= 1
		_, err := k.Open(altered, ad)
		assert.ErrorIs(t, err, sealing.ErrOpen, "byte %d altered", i)
	}
	for _, short := range [][]byte{nil, {}, sealed[:1], sealed[:20]} {
		_, err := k.Open(short, ad)
		assert.ErrorIs(t, err, sealing.ErrOpen)
	}
	other, err := sealing.New(key(2))
	require.NoError(t, err)
	_, err = other.Open(sealed, ad)
	assert.ErrorIs(t, err, sealing.ErrOpen, "another fleet's key opens nothing")

	s := k.SealString([]byte("state"), ad)
	got, err = k.OpenString(s, ad)
	require.NoError(t, err)
	assert.Equal(t, "state", string(got))
	_, err = k.OpenString("not base64!", ad)
	assert.ErrorIs(t, err, sealing.ErrOpen)
}

func TestRotation(t *testing.T) {
	t.Parallel()
	old, err := sealing.New(key(1))
	require.NoError(t, err)
	sealedOld := old.Seal([]byte("before"), nil)

	// Step 1: the new key is added last: old values still open, and the
	// old key still seals, so instances not yet changed open what this
	// one seals.
	both, err := sealing.New(key(1), key(2))
	require.NoError(t, err)
	got, err := both.Open(sealedOld, nil)
	require.NoError(t, err)
	assert.Equal(t, "before", string(got))
	_, err = old.Open(both.Seal([]byte("x"), nil), nil)
	assert.NoError(t, err)

	// Step 2: the new key seals; the old one still opens.
	rotated, err := sealing.New(key(2), key(1))
	require.NoError(t, err)
	got, err = rotated.Open(sealedOld, nil)
	require.NoError(t, err)
	assert.Equal(t, "before", string(got))
	sealedNew := rotated.Seal([]byte("after"), nil)
	_, err = both.Open(sealedNew, nil)
	assert.NoError(t, err, "an instance at step 1 opens it")

	// Step 3: the old key is dropped, and what it sealed no longer opens.
	onlyNew, err := sealing.New(key(2))
	require.NoError(t, err)
	_, err = onlyNew.Open(sealedOld, nil)
	assert.ErrorIs(t, err, sealing.ErrOpen)
	_, err = onlyNew.Open(sealedNew, nil)
	assert.NoError(t, err)
}

func TestKeysNeverShowAKey(t *testing.T) {
	t.Parallel()
	secret := key(0xAB)
	k, err := sealing.New(secret)
	require.NoError(t, err)
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("keys", "keys", k)
	shown := fmt.Sprintf("%v %+v %#v %s %x %q", k, k, k, k, k, k) + logged.String()
	for _, form := range []string{
		string(secret),
		fmt.Sprintf("%x", secret),
		base64.RawURLEncoding.EncodeToString(secret),
		base64.StdEncoding.EncodeToString(secret),
		"171, 171", // a byte slice printed as numbers
		"ab ab",
	} {
		assert.NotContains(t, shown, form)
	}
	assert.Contains(t, shown, "sealing.Keys{1}")
}

func TestParseKey(t *testing.T) {
	t.Parallel()
	secret := key(0xAB)
	for _, s := range []string{base64.RawURLEncoding.EncodeToString(secret), base64.URLEncoding.EncodeToString(secret), sealing.EncodeKey(secret)} {
		got, err := sealing.ParseKey(s)
		require.NoError(t, err, s)
		assert.Equal(t, secret, got)
	}
	for _, bad := range []string{"", "not base64!", base64.RawURLEncoding.EncodeToString(secret[:16])} {
		_, err := sealing.ParseKey(bad)
		require.Error(t, err)
		if bad != "" {
			assert.NotContains(t, err.Error(), bad, "a key is never quoted back")
		}
	}
	_, err := sealing.New(secret[:31])
	require.Error(t, err)
	_, err = sealing.New()
	require.Error(t, err)
}

func TestFleetKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := memory.New()

	// Two instances on one store, none configured: they agree.
	a, err := sealing.FleetKeys(ctx, store, nil)
	require.NoError(t, err)
	b, err := sealing.FleetKeys(ctx, store, nil)
	require.NoError(t, err)
	got, err := b.Open(a.Seal([]byte("from a"), nil), nil)
	require.NoError(t, err)
	assert.Equal(t, "from a", string(got))

	// Configured keys are used as given, and the store's key is not among them.
	configured, err := sealing.FleetKeys(ctx, store, [][]byte{key(7)})
	require.NoError(t, err)
	_, err = configured.Open(a.Seal([]byte("x"), nil), nil)
	assert.ErrorIs(t, err, sealing.ErrOpen)
	alone, err := sealing.New(key(7))
	require.NoError(t, err)
	_, err = alone.Open(configured.Seal([]byte("x"), nil), nil)
	assert.NoError(t, err)

	// A store that keeps no secrets needs a configured key.
	_, err = sealing.FleetKeys(ctx, noSecrets{store}, nil)
	assert.ErrorIs(t, err, sealing.ErrNoFleetKey)
}

// noSecrets is a store that keeps no secrets, and says so.
type noSecrets struct{ storage.Store }

func (noSecrets) Secret(context.Context, string, []byte) ([]byte, error) {
	return nil, storage.ErrUnsupported
}
