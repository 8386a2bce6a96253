package memory

import (
	"bytes"
	"context"
	"sync"

	"github.com/google/uuid"

	"github.com/toolgate/toolgate/storage"
)

// chain is one principal's receipts. Its lock is held from reading the
// chain's head through storing the receipt sealed on it, so two finishes of
// one principal take consecutive seqs; the signing (the slow part) happens
// under it but outside the store's one lock, so other principals' calls do
// not wait for it.
type chain struct {
	mu       sync.Mutex
	receipts []storage.Receipt // in seq order, from 1
}

// chainOf returns the principal's chain, created empty on first use.
func (s *Store) chainOf(principal string) *chain {
	s.chainsMu.Lock()
	defer s.chainsMu.Unlock()
	c, ok := s.chains[principal]
	if !ok {
		c = &chain{}
		s.chains[principal] = c
	}
	return c
}

// sealed is a receipt ready to be stored, and the chain it extends.
type sealed struct {
	chain *chain
	storage.Sealed
}

// seal locks the principal's chain and seals the next receipt on it. The
// caller stores the receipt with storeReceipt (or drops it) and then calls
// release.
func (s *Store) seal(principal string, seal storage.Seal) (*sealed, error) {
	c := s.chainOf(principal)
	c.mu.Lock()
	seq, prev := int64(1), ""
	if n := len(c.receipts); n > 0 {
		seq, prev = c.receipts[n-1].Seq+1, c.receipts[n-1].Hash
	}
	out, err := seal(seq, prev)
	if err != nil {
		c.mu.Unlock()
		return nil, err
	}
	out.Receipt = bytes.Clone(out.Receipt)
	return &sealed{chain: c, Sealed: out}, nil
}

// storeReceipt appends the sealed receipt and makes it the execution's
// (see Store.receiptOf); the caller holds s.mu, so it is stored in the
// same step as the execution it belongs to.
func (s *Store) storeReceipt(r *sealed, principal string, execution uuid.UUID) {
	s.receiptOf[execution] = r.Receipt
	c := r.chain
	seq := int64(len(c.receipts) + 1)
	c.receipts = append(c.receipts, storage.Receipt{
		Principal: principal, Seq: seq, ExecutionID: execution, Hash: r.Hash, Signed: r.Receipt,
	})
}

// response is what a read of a finished execution's stored response
// gives: a copy of its own, with the execution's receipt, if it has one,
// joined in. The caller holds s.mu to read the receipt; resp is never
// written in place, so joining it may wait until the lock is released.
func response(resp, signed []byte) []byte {
	if signed == nil {
		return bytes.Clone(resp)
	}
	return storage.WithReceipt(resp, signed)
}

// release unlocks the chain seal locked. Safe on nil.
func (r *sealed) release() {
	if r != nil {
		r.chain.mu.Unlock()
	}
}

// ListReceipts implements storage.Store.
func (s *Store) ListReceipts(ctx context.Context, principal string, after int64, limit int) ([]storage.Receipt, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c := s.chainOf(principal)
	c.mu.Lock()
	defer c.mu.Unlock()
	if after < 0 {
		after = 0
	}
	if after >= int64(len(c.receipts)) {
		return []storage.Receipt{}, nil
	}
	page := c.receipts[after:min(int64(len(c.receipts)), after+int64(limit))]
	out := make([]storage.Receipt, len(page))
	for i, r := range page {
		r.Signed = bytes.Clone(r.Signed)
		out[i] = r
	}
	return out, nil
}
