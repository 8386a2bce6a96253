package storage

import "context"

// SecretStore is the part of Store that keeps secrets the processes
// sharing the store must agree on, such as the key they seal state with
// when the operator configured none.
//
// A secret kept here is only as secret as the store: whoever can read the
// store can read it. An operator who wants none in the store configures
// the secret instead.
type SecretStore interface {
	// Secret returns the secret kept under name. When none is, it keeps
	// candidate under name and returns it: of any number of first calls
	// at once, from any number of processes, exactly one candidate is kept
	// and every call returns that one. A secret, once kept, never changes.
	// A store that keeps no secrets (a fake, say) returns ErrUnsupported,
	// and its users are then configured with theirs.
	Secret(ctx context.Context, name string, candidate []byte) ([]byte, error)
}
