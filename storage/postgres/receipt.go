package postgres

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/toolgate/toolgate/storage"
)

// Receipts (storage.Seal): each principal's chain is gapless and each
// receipt sealed on the hash of the one before, however many instances
// finish the principal's calls at once. The database enforces it:
//
//   - the receipts primary key (principal, seq) lets one receipt take a seq;
//     the insert is in the very statement that finishes (or resolves) the
//     execution, so a finish that lost its seq to another rolls back whole;
//   - that statement inserts seq n only when the principal's receipt n-1 is
//     there with the hash the receipt was sealed on (the chain CTE of
//     finishSealedSQL), so nothing this process believes about the chain
//     can make a gap or a wrong prev, even a chain head it remembers from
//     before a database crash lost the last commits.
//
// Seal needs the seq and the previous hash before the statement is sent,
// and the Store remembers each principal's chain head (chains) to spare a
// read per finish: a finish of a principal whose head it remembers seals on
// it and sends its one statement, with no round trip more than a finish
// without a receipt, and writes one row more (the receipt). The head is
// only ever set from committed data: a read of the receipts, or a receipt
// this Store has just committed. Reading it costs one round trip, on the
// principal's first sealed finish in this process (and after the head was
// forgotten to keep the memory bounded).
//
// When the remembered head was not the database's (another instance, or
// another Store of this process, finished one of the principal's calls
// since), the statement wrote nothing, and the finish is retried in an
// explicit transaction that first takes the chain's advisory lock
// (exclusive), reads the head, seals on it and finishes. Every other sealed
// statement takes the same lock shared, and only if no retry holds it or
// waits for it (pg_try_advisory_xact_lock_shared, which never waits): while
// a retry holds it, no other receipt of the principal can be written, so
// the retry succeeds at its first attempt, and a first attempt that finds
// the lock taken writes nothing and retries in its turn. A finish is thus
// sealed at most twice. Nothing waits for the advisory lock holding
// anything else, so it closes no deadlock.
//
// Within one Store, sealed finishes of one principal take turns (chains.wait)
// from reading the head through the statement (and the retry), so they do
// not race each other for seqs, which would only make them retry: the turn
// is for throughput, and correctness owes nothing to it. Finishes of one
// principal are serialized anyway, by the chain, wherever they run: each
// seals on the hash the one before committed.

// receiptLockClass is the first key of the two-key advisory lock on a
// principal's receipt chain; the second is chainKey.
const receiptLockClass = 0x72637074 // "rcpt"

// maxLockedAttempts bounds the retries of one sealed write under the
// chain's lock. Under it no other receipt of the principal can be written,
// so the first succeeds; the bound only keeps a broken invariant from
// looping.
const maxLockedAttempts = 3

// errChainMoved reports that a sealed write wrote nothing because the seq
// it sealed was not the chain's next when it ran: taken (by another
// finish), or sealed on a head that is not the database's, or the chain
// locked by a retry. It never leaves the package.
var errChainMoved = errors.New("postgres: the receipt chain moved")

// chainHead is the last receipt of a principal's chain: seq 0 and hash ""
// for an empty one.
type chainHead struct {
	seq  int64
	hash string
}

// chains is what a Store keeps of its principals' receipt chains: whose
// sealed write has the turn, and each chain's head as last committed or
// read. Heads are bounded as memo's maps are: forgetting one costs its
// principal's next finish a read.
type chains struct {
	turns turns // principals with a sealed write in flight or waiting
	mu    sync.Mutex
	heads map[string]chainHead // at most maxRemembered
}

func newChains() *chains {
	return &chains{turns: turns{m: map[string]*turn{}}, heads: map[string]chainHead{}}
}

// wait takes the principal's turn, waiting for the caller before it, and
// returns the function that gives it back.
func (c *chains) wait(ctx context.Context, principal string) (release func(), err error) {
	return c.turns.wait(ctx, principal)
}

// head returns the principal's chain head as last committed or read.
func (c *chains) head(principal string) (chainHead, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	h, ok := c.heads[principal]
	return h, ok
}

// setHead remembers the principal's chain head. Callers hold the
// principal's turn and pass only committed data.
func (c *chains) setHead(principal string, h chainHead) {
	c.mu.Lock()
	put(c.heads, principal, h)
	c.mu.Unlock()
}

// chainKey is the second key of the principal's chain lock. The schema is
// in it so that gateways in different schemas of one database do not wait
// for each other; two principals that share a key only take turns.
func (s *Store) chainKey(principal string) int32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(s.schema))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(principal))
	return int32(h.Sum32())
}

// querier is what a sealed write runs its statement on: the pool, or the
// transaction that holds the chain's lock. A statement with events after
// it goes as a batch (see sendWithOutbox).
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// sealedWrite is one attempt at a write that stores a receipt: on q, in a
// transaction that holds the chain's lock when locked, with the seq and
// prev it was sealed with and what Seal returned. It reports whether it
// wrote (the execution finished or resolved, its receipt stored), or
// errChainMoved when it wrote nothing because of the chain; any other
// outcome is wrote false, for the caller to explain.
type sealedWrite func(ctx context.Context, q querier, locked bool, seq int64, prev string, sealed storage.Sealed) (wrote bool, err error)

// headSQL reads a principal's chain head, off the primary key's index.
const headSQL = `SELECT seq, hash FROM {schema}.receipts WHERE principal = $1 ORDER BY seq DESC LIMIT 1`

// readHead reads the principal's chain head; an empty chain's is the zero
// chainHead.
func (s *Store) readHead(ctx context.Context, q querier, principal string) (chainHead, error) {
	var h chainHead
	err := q.QueryRow(ctx, s.sql(headSQL), principal).Scan(&h.seq, &h.hash)
	if errors.Is(err, pgx.ErrNoRows) {
		return chainHead{}, nil
	}
	if err != nil {
		return chainHead{}, translate(err)
	}
	return h, nil
}

// writeSealed runs write with a receipt sealed on the principal's chain
// head, in the principal's turn. With remembered set, it first tries on the
// head it remembers (read first when it has none) outside any transaction;
// when the chain moved, and always without remembered, it writes in a
// transaction that holds the chain's lock (see lockedWrite).
func (s *Store) writeSealed(ctx context.Context, principal string, seal storage.Seal, remembered bool, write sealedWrite) (bool, error) {
	release, err := s.chains.wait(ctx, principal)
	if err != nil {
		return false, err
	}
	defer release()
	if remembered {
		head, ok := s.chains.head(principal)
		if !ok {
			if head, err = s.readHead(ctx, s.pool, principal); err != nil {
				return false, err
			}
			s.chains.setHead(principal, head)
		}
		next := head.seq + 1
		sealed, err := seal(next, head.hash)
		if err != nil {
			return false, err
		}
		wrote, err := write(ctx, s.pool, false, next, head.hash, sealed)
		if !errors.Is(err, errChainMoved) {
			if wrote {
				s.chains.setHead(principal, chainHead{next, sealed.Hash})
			}
			return wrote, err
		}
	}
	for range maxLockedAttempts {
		wrote, err := s.lockedWrite(ctx, principal, seal, write)
		if !errors.Is(err, errChainMoved) {
			return wrote, err
		}
	}
	return false, fmt.Errorf("postgres: the receipt chain of %q moved under its lock", principal)
}

// lockedWrite runs write in a transaction that first takes the principal's
// chain lock, exclusive, and reads the chain head, so that the receipt is
// sealed on the head no other writer can move before the commit. The lock
// and the read go in one round trip; with BEGIN, the write and COMMIT it is
// four.
func (s *Store) lockedWrite(ctx context.Context, principal string, seal storage.Seal, write sealedWrite) (wrote bool, err error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return false, translate(err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	batch := &pgx.Batch{}
	batch.Queue(`SELECT pg_advisory_xact_lock($1::int4, $2::int4)`, int32(receiptLockClass), s.chainKey(principal))
	batch.Queue(s.sql(headSQL), principal)
	br := tx.SendBatch(ctx, batch)
	var head chainHead
	_, err = br.Exec()
	if err == nil {
		err = br.QueryRow().Scan(&head.seq, &head.hash)
		if errors.Is(err, pgx.ErrNoRows) {
			err = nil
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return false, translate(err)
	}
	next := head.seq + 1
	sealed, err := seal(next, head.hash)
	if err != nil {
		return false, err
	}
	if wrote, err = write(ctx, tx, true, next, head.hash, sealed); err != nil {
		return false, err
	}
	if err = tx.Commit(ctx); err != nil {
		return false, translate(err)
	}
	if wrote {
		head = chainHead{next, sealed.Hash}
	}
	s.chains.setHead(principal, head)
	return wrote, nil
}

// receiptConflict reports whether err is the receipts primary key refusing
// a seq another writer took: the statement rolled back whole.
func receiptConflict(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == codeUniqueViolation && pgErr.ConstraintName == "receipts_pkey"
}

// receiptArgs are a receipt's hash and signed bytes as stored: never NULL.
func receiptArgs(sealed storage.Sealed) (hash string, signed []byte) {
	signed = sealed.Receipt
	if signed == nil {
		signed = []byte{}
	}
	return sealed.Hash, signed
}

// storedResponse is response as a finish or a resolution stores it: never
// NULL, which means "still running". It is stored without the receipt,
// which its row keeps (migration 0018) and reads join back.
func storedResponse(response []byte) []byte {
	if response == nil {
		return []byte{}
	}
	return response
}

// ListReceipts returns up to limit of the principal's receipts with seq
// above after, in seq order, off the primary key's index.
func (s *Store) ListReceipts(ctx context.Context, principal string, after int64, limit int) ([]storage.Receipt, error) {
	rows, err := s.pool.Query(ctx, s.sql(`
		SELECT seq, execution_id, hash, signed FROM {schema}.receipts
		WHERE principal = $1 AND seq > $2 ORDER BY seq LIMIT $3`), principal, after, limit)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []storage.Receipt{}
	for rows.Next() {
		r := storage.Receipt{Principal: principal}
		if err := rows.Scan(&r.Seq, bytesAt(&r.ExecutionID), &r.Hash, &r.Signed); err != nil {
			return nil, translate(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, translate(err)
	}
	return out, nil
}
