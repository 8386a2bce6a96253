package postgres

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/toolgate/toolgate/storage"
)

// maxFinishBatch is the most finishes one batch holds.
const maxFinishBatch = 32

// finishBatchesInFlight is how many finish batches a Store sends at once:
// one. A finish waits for no lock another process holds for long (only
// for rows other finishes and admissions hold until their commits), so a
// second batch would not keep finishes moving; it would halve the batches
// and meet the first on the same hot rows (usage shards, budget days) in
// orders that can deadlock.
const finishBatchesInFlight = 1

// runFinishes is the finishes' batcher.Run: one finish alone as
// finishAlone sends it, several as finishBatch does.
func (s *Store) runFinishes(ctx context.Context, fs []storage.Finish) []error {
	xs := make([]finishing, len(fs))
	for i, f := range fs {
		xs[i] = s.finishing(f)
	}
	if len(xs) == 1 {
		return []error{s.finishAlone(ctx, xs[0], true)}
	}
	return s.finishBatch(ctx, xs)
}

// sealedItem is a batched finish's receipt: the seq and prev it was sealed
// on, and what Seal returned.
type sealedItem struct {
	seq    int64
	prev   string
	sealed storage.Sealed
}

// finishBatch finishes several executions in one round trip and one
// transaction, which waits for the disk once for all of them: each
// finish's own statement, the one finishAlone would send, in the order of
// their usage shards, then of their principals. A batch holds every row
// it updates until it commits, and the shards are the rows finishes of
// one tool meet on: in that order, two batches of one tool's finishes
// (on two instances) take their shards in the same order, and cannot
// deadlock on them. (A Store sends one finish batch at a time.) Each
// finish's answer is its own, as if it had run alone:
//
//   - a finish whose lease was lost, or whose execution is gone, wrote
//     nothing and is explained as finishAlone explains it;
//   - receipts: the batch takes the turn of each principal it seals for,
//     in byte order (see chains), and seals its finishes of that principal
//     one after the other on the chain head, each on the hash of the one
//     before, so that they commit together with no gap. Each statement
//     still checks that the seq before its own is there with the hash it
//     was sealed on: when the chain had moved (another instance), that
//     finish and the principal's later ones in the batch wrote nothing,
//     and are finished again alone, under the chain's lock (which reads
//     its head), so that each is sealed at most twice, as a finish sent
//     alone is;
//   - a statement that fails (a receipt's seq taken meanwhile by another
//     instance, a deadlock with another batch on rows they both update, a
//     broken connection) rolls the whole transaction back, and each finish
//     is then sent alone, so that only one at fault fails.
func (s *Store) finishBatch(ctx context.Context, xs []finishing) []error {
	out := make([]error, len(xs))
	order := make([]int, len(xs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Or(cmp.Compare(usageShard(xs[a].f.ExecutionID), usageShard(xs[b].f.ExecutionID)),
			strings.Compare(xs[a].f.Principal, xs[b].f.Principal))
	})

	var sealers []string
	for _, x := range xs {
		if x.f.Seal != nil {
			sealers = append(sealers, x.f.Principal)
		}
	}
	sealers = sortedUnique(sealers)
	releases := make([]func(), 0, len(sealers))
	releaseTurns := func() {
		for _, r := range releases {
			r()
		}
		releases = releases[:0]
	}
	defer releaseTurns()
	heads := make(map[string]chainHead, len(sealers))
	for _, p := range sealers {
		release, err := s.chains.wait(ctx, p)
		if err != nil {
			for i := range out {
				out[i] = err
			}
			return out
		}
		releases = append(releases, release)
		head, ok := s.chains.head(p)
		if !ok {
			if head, err = s.readHead(ctx, s.pool, p); err != nil {
				for i := range out {
					out[i] = err
				}
				return out
			}
			s.chains.setHead(p, head)
		}
		heads[p] = head
	}

	// Seal each finish on the one before it of its principal.
	seals := make([]*sealedItem, len(xs))
	tip := maps.Clone(heads)
	var sent []int
	for _, i := range order {
		x := xs[i]
		if x.f.Seal != nil {
			h := tip[x.f.Principal]
			next := h.seq + 1
			sealed, err := x.f.Seal(next, h.hash)
			if err != nil {
				out[i] = err
				continue
			}
			seals[i] = &sealedItem{seq: next, prev: h.hash, sealed: sealed}
			tip[x.f.Principal] = chainHead{next, sealed.Hash}
		}
		sent = append(sent, i)
	}
	if len(sent) == 0 {
		return out
	}

	batch := &pgx.Batch{}
	for _, i := range sent {
		x := xs[i]
		args := x.args()
		if si := seals[i]; si != nil {
			hash, signed := receiptArgs(si.sealed)
			args = append(args, s.chainKey(x.f.Principal), si.seq, si.prev, hash, signed, false)
		}
		batch.Queue(s.sql(x.statement()), args...)
	}
	type answer struct {
		ok bool // a sealed statement's chain check
		n  int  // executions finished
	}
	answers := make([]answer, len(sent))
	br := s.pool.SendBatch(ctx, batch)
	var err error
	for j, i := range sent {
		if seals[i] != nil {
			err = br.QueryRow().Scan(&answers[j].ok, &answers[j].n)
		} else {
			answers[j].ok = true
			err = br.QueryRow().Scan(&answers[j].n)
		}
		if err != nil {
			break
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		// Nothing of the batch was written: each finish alone, in order,
		// once the turns are given back (the sealed ones take them again).
		s.batchRetries.Add(1)
		releaseTurns()
		for _, i := range sent {
			out[i] = s.finishAlone(ctx, xs[i], false)
		}
		return out
	}

	// Committed: each principal's head is its last receipt written, and
	// every finish that wrote nothing is explained, or finished alone.
	var again, explain []int
	for j, i := range sent {
		a, si := answers[j], seals[i]
		switch {
		case a.ok && a.n == 1:
			if si != nil {
				s.chains.setHead(xs[i].f.Principal, chainHead{si.seq, si.sealed.Hash})
			}
		case !a.ok:
			again = append(again, i)
		default:
			explain = append(explain, i)
		}
	}
	releaseTurns()
	for _, i := range explain {
		out[i] = s.finishFailure(ctx, xs[i].f)
	}
	for _, i := range again {
		out[i] = s.finishAlone(ctx, xs[i], false)
	}
	return out
}
