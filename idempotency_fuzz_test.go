package toolgate_test

import (
	"testing"

	"github.com/toolgate/toolgate/toolgatetype"
)

// FuzzIdempotencyKey checks the key rule holds for any input: a key is
// accepted exactly when it is 1 to 255 printable ASCII characters.
func FuzzIdempotencyKey(f *testing.F) {
	for _, seed := range []string{"", "k", "order-42/step-1", " ", "\x00", "é", "k\r\nSet-Cookie: x", string(make([]byte, 256))} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, key string) {
		err := toolgatetype.ValidateIdempotencyKey(key)
		printable := len(key) >= 1 && len(key) <= toolgatetype.MaxIdempotencyKeyLength
		for i := 0; i < len(key); i++ {
			if key[i] < 0x20 || key[i] > 0x7e {
				printable = false
			}
		}
		if printable != (err == nil) {
			t.Fatalf("key %q: accepted=%t, want %t", key, err == nil, printable)
		}
	})
}
