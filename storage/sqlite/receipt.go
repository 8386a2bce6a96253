package sqlite

import (
	"context"
	"errors"

	"github.com/google/uuid"

	"github.com/toolgate/toolgate/storage"
)

// Receipts are kept in the receipts table (0007_receipts.sql), one chain
// per principal. A receipt is sealed and stored by the write that finishes
// (or resolves) its execution: the chain's head is read inside that write,
// which holds the file's write lock, so two writes on one chain, from this
// Store or from any other process on the file, take consecutive seqs, and
// a write that fails keeps neither its changes nor its receipt.
//
// Seal, and so the signature, runs inside the write, on the writer's
// goroutine, while every other write of the Store (and of the other
// processes on the file) waits: it must compute, never block.
// Sealing before the write instead, on a head the Store remembers, and
// keeping that receipt when the write finds the head unchanged, took the
// signature out of the write but made no difference BenchmarkFinish or
// BenchmarkQuoteCallSQLiteSealed could measure: a finish's page writes to
// the log cost the writer far more than an Ed25519 signature.

// storedResponse is the response a finish or a resolution stores, never
// nil (a finished execution always has a response, even an empty one, and
// NULL means "still running"), and, when seal is set, the seq of the
// receipt it sealed and stored for it (nil when none). The response is
// stored without the receipt, which stays in its row only, named by the
// execution's receipt_seq (0013_receipt_once.sql); reads join the two.
func storedResponse(tx *writeTx, principal string, execution uuid.UUID, response []byte, seal storage.Seal) ([]byte, *int64, error) {
	var seq *int64
	if seal != nil {
		s, err := sealReceipt(tx, principal, execution, seal)
		if err != nil {
			return nil, nil, err
		}
		seq = &s
	}
	if response == nil {
		response = []byte{}
	}
	return response, seq, nil
}

// sealReceipt reads principal's chain head, has seal make the next receipt
// on it and stores the receipt for execution. It returns its seq;
// an error from seal is returned as it is, and the caller's write then
// rolls back with nothing kept.
func sealReceipt(tx *writeTx, principal string, execution uuid.UUID, seal storage.Seal) (int64, error) {
	seq, prev, err := chainHead(tx, principal)
	if err != nil {
		return 0, err
	}
	out, err := seal(seq+1, prev)
	if err != nil {
		return 0, err
	}
	signed := out.Receipt
	if signed == nil {
		signed = []byte{}
	}
	if _, err := tx.exec(`INSERT INTO receipts (principal, seq, execution_id, hash, signed) VALUES (?, ?, ?, ?, ?)`,
		principal, seq+1, idBytes(execution), out.Hash, signed); err != nil {
		return 0, err
	}
	return seq + 1, nil
}

// chainHead returns the seq and hash of principal's last receipt: 0 and ""
// when it has none.
func chainHead(tx *writeTx, principal string) (seq int64, hash string, err error) {
	err = translate(tx.queryRow(`SELECT seq, hash FROM receipts WHERE principal = ? ORDER BY seq DESC LIMIT 1`,
		principal).Scan(&seq, &hash))
	if errors.Is(err, storage.ErrNotFound) {
		return 0, "", nil
	}
	return seq, hash, err
}

// ListReceipts returns up to limit of principal's receipts with a seq
// above after, in seq order; an empty slice when there are none.
func (s *Store) ListReceipts(ctx context.Context, principal string, after int64, limit int) ([]storage.Receipt, error) {
	rows, err := s.pool(ctx).query(`
		SELECT seq, execution_id, hash, signed FROM receipts
		WHERE principal = ? AND seq > ? ORDER BY seq LIMIT ?`, principal, after, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []storage.Receipt{}
	for rows.Next() {
		r := storage.Receipt{Principal: principal}
		var id []byte
		if err := rows.Scan(&r.Seq, &id, &r.Hash, &r.Signed); err != nil {
			return nil, translate(err)
		}
		if r.ExecutionID, err = parseID(id); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, translate(err)
	}
	return out, nil
}
