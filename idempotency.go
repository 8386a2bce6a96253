package toolgate

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/toolgate/toolgate/registry"
)

// MaxIdempotencyKeyLength is the longest Idempotency-Key accepted.
const MaxIdempotencyKeyLength = 255

// ValidateIdempotencyKey checks a key is 1 to 255 printable ASCII
// characters, returning idempotency_key_missing or idempotency_key_invalid.
func ValidateIdempotencyKey(key string) error {
	if key == "" {
		return newError(CodeIdempotencyKeyMissing, "an Idempotency-Key is required on every call")
	}
	if len(key) > MaxIdempotencyKeyLength {
		return newError(CodeIdempotencyKeyInvalid, "the Idempotency-Key must be at most %d characters", MaxIdempotencyKeyLength)
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x20 || key[i] > 0x7e {
			return newError(CodeIdempotencyKeyInvalid, "the Idempotency-Key must be printable ASCII")
		}
	}
	return nil
}

// fingerprint identifies what a call asks for, so that a reused key can be
// told apart from a retry: the tool, the quote, the input in canonical form
// (so key order and spacing do not matter) and the approval digest.
func fingerprint(toolID, quoteID string, canonicalInput []byte, approvalDigest string) string {
	doc, _ := json.Marshal(struct {
		Tool     string          `json:"tool"`
		Quote    string          `json:"quoteId"`
		Input    json.RawMessage `json:"input"`
		Approval string          `json:"approval"`
	}{toolID, quoteID, canonicalInput, approvalDigest})
	canon, err := registry.Canonicalize(doc)
	if err != nil {
		canon = doc // unreachable: every part is already canonical
	}
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:])
}
