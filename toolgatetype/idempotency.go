package toolgatetype

import "github.com/google/uuid"

// NewIdempotencyKey returns a new random Idempotency-Key, for a call whose
// caller has no natural key of its own.
func NewIdempotencyKey() string { return uuid.NewString() }

// MaxIdempotencyKeyLength is the longest Idempotency-Key accepted.
const MaxIdempotencyKeyLength = 255

// ValidateIdempotencyKey checks a key is 1 to 255 printable ASCII
// characters, returning idempotency_key_missing or idempotency_key_invalid.
func ValidateIdempotencyKey(key string) error {
	if key == "" {
		return Errorf(CodeIdempotencyKeyMissing, "an Idempotency-Key is required on every call")
	}
	if len(key) > MaxIdempotencyKeyLength {
		return Errorf(CodeIdempotencyKeyInvalid, "the Idempotency-Key must be at most %d characters", MaxIdempotencyKeyLength)
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x20 || key[i] > 0x7e {
			return Errorf(CodeIdempotencyKeyInvalid, "the Idempotency-Key must be printable ASCII")
		}
	}
	return nil
}
