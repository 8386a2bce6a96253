package receipt

import (
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// Seal returns the storage.Seal of a finishing execution: r is its receipt
// but for seq and prev, which the store supplies. The store keeps the
// signed receipt apart from the execution's response, and its readers get
// the two joined (storage.WithReceipt). When sealed is not nil, the
// receipt the store kept (the last sealed) is written there as well.
func (s *Signer) Seal(r toolgatetype.Receipt, sealed *toolgatetype.SignedReceipt) storage.Seal {
	return func(seq int64, prev string) (storage.Sealed, error) {
		r.Seq, r.Prev = seq, nil
		if prev != "" {
			r.Prev = &prev
		}
		signed, hash, sig := s.sign(&r)
		if sealed != nil {
			*sealed = toolgatetype.SignedReceipt{Receipt: r, Signature: sig}
		}
		return storage.Sealed{Receipt: signed, Hash: hash}, nil
	}
}
