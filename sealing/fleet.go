package sealing

import (
	"context"
	"errors"
	"fmt"

	"github.com/toolgate/toolgate/storage"
)

// FleetSecretName is the name the fleet's generated key is kept under in
// the store (storage.SecretStore).
const FleetSecretName = "sealing-key"

// ErrNoFleetKey is returned by FleetKeys when no key is configured and the
// store cannot keep one (its Secret says storage.ErrUnsupported).
var ErrNoFleetKey = errors.New("sealing: no key is configured and the store keeps no secrets")

// FleetKeys returns the fleet's keys: configured, when any are (the first
// seals, every one opens), and nothing is then read from or written to
// the store; otherwise the key kept in store, generated and kept by the
// first instance that asks, so that every instance on one store seals and
// opens alike.
func FleetKeys(ctx context.Context, store storage.Store, configured [][]byte) (*Keys, error) {
	if len(configured) > 0 {
		return New(configured...)
	}
	key, err := store.Secret(ctx, FleetSecretName, GenerateKey())
	if errors.Is(err, storage.ErrUnsupported) {
		return nil, ErrNoFleetKey
	}
	if err != nil {
		return nil, fmt.Errorf("sealing: read the fleet's key: %w", err)
	}
	return New(key)
}
