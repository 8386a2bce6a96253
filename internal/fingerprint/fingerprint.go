// Package fingerprint identifies what a call asks for, so that a retry
// under an Idempotency-Key can be told from another request under it.
package fingerprint

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/toolgate/toolgate/registry"
)

// Of identifies what a call asks for, so that a retry can be told
// from another request under the same key: the SHA-256 of the RFC 8785
// document {"approval","grant","input","quoteId","tool"} of the approval
// digest, the grant (a member left out when the call carries none, so a
// call without one keeps the fingerprint it always had), the input in
// canonical form (so key order and spacing do not matter), the quote and
// the tool. The document is written directly, members in their canonical
// order around the input, which is canonical already.
func Of(toolID, quoteID string, canonicalInput []byte, approvalDigest string) string {
	return WithGrant(toolID, quoteID, canonicalInput, approvalDigest, "")
}

// WithGrant is Of for a call that may carry a grant.
func WithGrant(toolID, quoteID string, canonicalInput []byte, approvalDigest, grant string) string {
	doc := make([]byte, 0, 80+len(toolID)+len(quoteID)+len(canonicalInput)+len(approvalDigest)+len(grant))
	doc = append(doc, `{"approval":`...)
	doc = appendCanonicalString(doc, approvalDigest)
	if grant != "" {
		doc = append(doc, `,"grant":`...)
		doc = appendCanonicalString(doc, grant)
	}
	doc = append(doc, `,"input":`...)
	doc = append(doc, canonicalInput...)
	doc = append(doc, `,"quoteId":`...)
	doc = appendCanonicalString(doc, quoteID)
	doc = append(doc, `,"tool":`...)
	doc = appendCanonicalString(doc, toolID)
	doc = append(doc, '}')
	sum := sha256.Sum256(doc)
	return hex.EncodeToString(sum[:])
}

// appendCanonicalString appends s as RFC 8785 writes a JSON string. Ids and
// digests are printable ASCII without quotes or backslashes, written as they
// are; anything else (a caller may send any approval) takes the general way.
func appendCanonicalString(dst []byte, s string) []byte {
	if plainASCII(s) {
		dst = append(dst, '"')
		dst = append(dst, s...)
		return append(dst, '"')
	}
	raw, _ := json.Marshal(s) // a string always encodes
	canon, err := registry.Canonicalize(raw)
	if err != nil {
		canon = raw // unreachable: an encoded string is canonicalizable
	}
	return append(dst, canon...)
}

// plainASCII reports whether s is printable ASCII without a quote or a
// backslash: a string RFC 8785 writes exactly as it is.
func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}
