package postgres

import (
	"context"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/toolgate/toolgate/storage"
)

// maxFinishBatch is the most finishes one batch holds.
const maxFinishBatch = 32

// runFinishes is the finishes' batcher.Run: one finish alone as
// finishAlone sends it, several as finishBatch does.
func (s *Store) runFinishes(ctx context.Context, fs []storage.Finish) []finishOutcome {
	xs := make([]finishing, len(fs))
	for i, f := range fs {
		xs[i] = s.finishing(f)
	}
	if len(xs) == 1 {
		return []finishOutcome{{err: s.finishAlone(ctx, xs[0], true)}}
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
// finish's own statement, the one finishAlone would send, in the byte
// order of their principals (the order admission batches update the same
// principals' rollup rows in), all counting completed calls in one usage
// shard, so that a batch holds one shard row of each tool and two batches
// rarely meet on two. Each finish's answer is its own, as if it had run
// alone:
//
//   - a finish whose lease was lost, or whose execution is gone, wrote
//     nothing and is explained as finishAlone explains it;
//   - receipts: the batch takes the turn of each principal it seals for,
//     in byte order (see chains), and seals its finishes of that principal
//     one after the other on the chain head, each on the hash of the one
//     before, so that they commit together with no gap. Each statement
//     still checks that the seq before its own is there with the hash it
//     was sealed on and its own is free: when the chain had moved
//     (another instance), that finish and the principal's later ones in
//     the batch wrote nothing, and are finished again alone, under the
//     chain's lock (which reads its head), so that each is sealed at most
//     twice, as a finish sent alone is;
//   - events and alerts: after the finishes, in the same transaction,
//     the statements that write each finish's events and weigh its
//     alerts (see outboxWrites), for the finishes that wrote only;
//   - a statement that fails (a lock waited for longer than lockWait, a
//     deadlock with another batch on rows they both update, a receipt's
//     seq taken meanwhile, a broken connection) rolls the whole
//     transaction back, and each finish is then sent alone, so that only
//     one at fault fails.
//
// What is sent again alone, or explained, is done by the finish's caller
// on its own goroutine (see FinishExecution), not holding up the batches
// behind.
func (s *Store) finishBatch(ctx context.Context, xs []finishing) []finishOutcome {
	out := make([]finishOutcome, len(xs))
	for i, x := range xs {
		out[i].x = x
	}
	failAll := func(err error) []finishOutcome {
		for i := range out {
			out[i].err = err
		}
		return out
	}
	order := make([]int, len(xs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return strings.Compare(xs[a].f.Principal, xs[b].f.Principal) })
	shard := usageShard(xs[order[0]].f.ExecutionID)

	var sealers []string
	for _, x := range xs {
		if x.f.Seal != nil {
			sealers = append(sealers, x.f.Principal)
		}
	}
	sealers = sortedUnique(sealers)
	var releases []func()
	defer func() {
		for _, release := range releases {
			release()
		}
	}()
	tip := make(map[string]chainHead, len(sealers))
	for _, p := range sealers {
		release, err := s.chains.wait(ctx, p)
		if err != nil {
			return failAll(err)
		}
		releases = append(releases, release)
		head, ok := s.chains.head(p)
		if !ok {
			if head, err = s.readHead(ctx, s.pool, p); err != nil {
				return failAll(err)
			}
			s.chains.setHead(p, head)
		}
		tip[p] = head
	}

	// Seal each finish on the one before it of its principal.
	seals := make([]*sealedItem, len(xs))
	var sent []int
	for _, i := range order {
		x := xs[i]
		if x.f.Seal != nil {
			h := tip[x.f.Principal]
			next := h.seq + 1
			sealed, err := x.f.Seal(next, h.hash)
			if err != nil {
				out[i].err = err
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
	batch.Queue(s.batchSettings(false, true))
	for _, i := range sent {
		x := xs[i]
		args := x.args()
		args[9] = shard
		if si := seals[i]; si != nil {
			hash, signed := receiptArgs(si.sealed)
			args = append(args, s.chainKey(x.f.Principal), si.seq, si.prev, hash, signed, false)
		}
		batch.Queue(s.sql(x.statement()), args...)
	}
	// The finishes' events and alerts, after all of them: each written
	// only if its finish was (see outboxWrites), and the alerts' locks
	// taken after every row lock of the batch (see lockAlertBudgetsSQL).
	var events outboxWrites
	for _, i := range sent {
		events.merge(xs[i].outbox)
	}
	outboxStatements := s.queueOutbox(batch, &events)
	type answer struct {
		ok bool // a sealed statement's chain check
		n  int  // executions finished
	}
	answers := make([]answer, len(sent))
	br := s.pool.SendBatch(ctx, batch)
	_, err := br.Exec()
	for j, i := range sent {
		if err != nil {
			break
		}
		if seals[i] != nil {
			err = br.QueryRow().Scan(&answers[j].ok, &answers[j].n)
		} else {
			answers[j].ok = true
			err = br.QueryRow().Scan(&answers[j].n)
		}
	}
	for range outboxStatements {
		if err != nil {
			break
		}
		_, err = br.Exec()
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		// Nothing of the batch was written: each finish alone.
		s.batchRetries.Add(1)
		for _, i := range sent {
			out[i].then = finishAgainAlone
		}
		return out
	}

	// Committed: each principal's head is its last receipt written, and
	// every finish that wrote nothing is explained, or finished alone.
	for j, i := range sent {
		a, si := answers[j], seals[i]
		switch {
		case a.ok && a.n == 1:
			if si != nil {
				s.chains.setHead(xs[i].f.Principal, chainHead{si.seq, si.sealed.Hash})
			}
		case !a.ok:
			out[i].then = finishAgainAlone
		default:
			out[i].then = explainFinish
		}
	}
	return out
}
