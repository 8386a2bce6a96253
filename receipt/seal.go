package receipt

import (
	"bytes"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// Seal returns the storage.Seal of a finishing execution: r is its receipt
// but for seq and prev, which the store supplies; response is the
// execution's response body, a JSON object, which gets the signed receipt
// as its "receipt" member. When sealed is not nil, the receipt the store
// kept (the last sealed) is written there as well.
func (s *Signer) Seal(r toolgatetype.Receipt, response []byte, sealed *toolgatetype.SignedReceipt) storage.Seal {
	return func(seq int64, prev string) (storage.Sealed, error) {
		r.Seq, r.Prev = seq, nil
		if prev != "" {
			r.Prev = &prev
		}
		signed, hash, sig := s.sign(&r)
		if sealed != nil {
			*sealed = toolgatetype.SignedReceipt{Receipt: r, Signature: sig}
		}
		return storage.Sealed{Receipt: signed, Hash: hash, Response: WithReceipt(response, signed)}, nil
	}
}

// WithReceipt returns the JSON object response with signed as its last
// member, "receipt". A response that is not an object is returned as it is.
func WithReceipt(response, signed []byte) []byte {
	end := bytes.LastIndexByte(response, '}')
	if end < 0 {
		return response
	}
	out := make([]byte, 0, len(response)+len(signed)+len(`,"receipt":`))
	out = append(out, response[:end]...)
	if len(bytes.TrimSpace(response[1:end])) > 0 { // an empty object takes no comma
		out = append(out, ',')
	}
	out = append(out, `"receipt":`...)
	out = append(out, signed...)
	return append(out, response[end:]...)
}
