package postgres

import (
	"context"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/toolgate/toolgate/storage"
)

// maxQuoteBatch is the most quotes one batch holds. A batch holds the
// quote locks of its capped principals until it commits, so a quote of
// another instance for one of them waits for the whole batch; past a few
// dozen the round trips and commits saved are few.
const maxQuoteBatch = 32

// readOutcome is what ReadBatch answers one Reads with; alone when its
// batch failed as a whole and it must be sent again by itself.
type readOutcome struct {
	res   storage.ReadResult
	err   error
	alone bool
}

// quoteReads is ReadBatch of r: a quote's reads and insert share a round
// trip and a transaction with the quotes of other callers that arrive
// while earlier ones are in flight (see quoteBatch); other reads, which a
// call makes and which write nothing, go alone.
func (s *Store) quoteReads(ctx context.Context, r storage.Reads) (storage.ReadResult, error) {
	if r.CreateQuote == nil {
		return s.readBatch(ctx, r)
	}
	out, err := s.quotes.Do(ctx, r)
	if err != nil {
		return storage.ReadResult{}, err
	}
	if out.alone {
		return s.readBatch(ctx, r)
	}
	return out.res, out.err
}

// runQuotes is the quotes' batcher.Run: one quote alone as readBatch sends
// it, several as quoteBatch does.
func (s *Store) runQuotes(ctx context.Context, rs []storage.Reads) []readOutcome {
	if len(rs) == 1 {
		res, err := s.readBatch(ctx, rs[0])
		return []readOutcome{{res: res, err: err}}
	}
	return s.quoteBatch(ctx, rs)
}

// lockQuotesBatchSQL takes the quote locks (see CreateQuoteCapped) of
// principals $2 until the transaction ends, in the order of their keys:
// two batches that share principals take them in one order, and a quote
// alone takes one lock only, so none waits for another in a cycle.
// Principals whose hashes collide share a lock, taken once.
const lockQuotesBatchSQL = `
	SELECT pg_advisory_xact_lock($1, h) FROM (
		SELECT DISTINCT hashtext(p) AS h FROM unnest($2::text[]) AS p ORDER BY h
	) AS keys`

// quoteBatch does the reads and stores the quotes of several callers in
// one round trip and one transaction, with the answer of each its own,
// exactly as if each had been sent alone, one after the other in the
// batch's order (by principal, and for each principal in the order they
// arrived):
//
//   - the batch commits without waiting for its WAL, as a quote alone
//     does, and first takes the quote locks of every principal whose open
//     quotes are capped, so that each quote's count sees the quotes the
//     batch stored before it and every quote committed before the batch;
//   - then each quote's own statements run, the ones readBatch would send;
//   - a quote refused by its principal's cap, or by its key's record made
//     meanwhile, is that quote's answer and stores nothing; the batch
//     commits the others;
//   - a statement that fails (a quote id taken, a lock waited for longer
//     than lockWait, a broken connection) rolls the whole transaction
//     back, and each quote is then sent alone, so that only the one at
//     fault fails.
func (s *Store) quoteBatch(ctx context.Context, rs []storage.Reads) []readOutcome {
	out := make([]readOutcome, len(rs))
	order := make([]int, len(rs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return strings.Compare(rs[a].Principal, rs[b].Principal) })
	var capped []string
	for _, r := range rs {
		if r.MaxOpenQuotes > 0 {
			capped = append(capped, r.Principal)
		}
	}

	batch := &pgx.Batch{}
	batch.Queue(s.batchSettings(true, true))
	if len(capped) > 0 {
		batch.Queue(s.sql(lockQuotesBatchSQL), openQuotesLockClass, sortedUnique(capped))
	}
	refused := make([]error, len(rs))
	for _, i := range order {
		if err := s.queueReads(batch, rs[i], &out[i].res, &refused[i], true); err != nil {
			out[i].err = err
		}
	}
	if err := s.pool.SendBatch(ctx, batch).Close(); err != nil {
		// Nothing of the batch was stored: each quote alone, on its
		// caller's goroutine, so that only one at fault fails.
		s.batchRetries.Add(1)
		for i := range out {
			if out[i].err == nil {
				out[i] = readOutcome{alone: true}
			}
		}
		return out
	}
	for i, r := range rs {
		switch {
		case out[i].err != nil:
		case refused[i] != nil:
			out[i] = readOutcome{err: refused[i]}
		default:
			s.readDone(r, out[i].res)
		}
	}
	return out
}
