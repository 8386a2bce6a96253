package toolgate

import (
	"context"
	"time"

	"github.com/toolgate/toolgate/storage"
)

// pruneBatch is how many records of each kind one Prune deletes at most, so
// a pass never holds the store for long; a backlog clears over later passes.
const pruneBatch = 1000

// Prune deletes what the retention policy no longer needs: idempotency
// records and executions older than the retention, quotes and approval
// requests expired for as long, and spend history from before the previous
// UTC month (no limit looks further back). An ambiguous execution nobody
// has resolved is kept, with its key and its reservation, however old: it
// still needs a person. It deletes at most 1,000 records of each kind, so
// a pass never holds the store for long.
func (g *Gateway) Prune(ctx context.Context) (storage.PruneResult, error) {
	now := g.clock.Now().UTC()
	prevMonth := time.Date(now.Year(), now.Month()-1, 1, 0, 0, 0, 0, time.UTC)
	return g.store.Prune(ctx, storage.Prune{
		IdempotencyBefore:      now.Add(-g.cfg.IdempotencyRetention),
		QuotesBefore:           now.Add(-g.cfg.IdempotencyRetention),
		LedgerBefore:           prevMonth,
		ApprovalRequestsBefore: now.Add(-g.cfg.IdempotencyRetention),
		EventsBefore:           now.Add(-g.cfg.IdempotencyRetention),
		Limit:                  pruneBatch,
	})
}

// RunRetention prunes every interval until ctx is done. Servers run it in
// a goroutine; with several instances on one database, each may run it, since
// pruning is idempotent.
func (g *Gateway) RunRetention(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			for {
				res, err := g.Prune(ctx)
				if err != nil {
					g.log.WarnContext(ctx, "retention pass failed", "error", err)
					break
				}
				// A full batch means a backlog: keep going until it clears.
				if res.Idempotency < pruneBatch && res.Quotes < pruneBatch && res.Ledger < pruneBatch &&
					res.ApprovalRequests < pruneBatch {
					break
				}
			}
		}
	}
}
