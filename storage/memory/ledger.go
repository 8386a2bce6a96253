package memory

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"github.com/toolgate/toolgate/storage"
)

// ledgerState is where a ledger row's amount stands.
type ledgerState uint8

const (
	ledgerReserved ledgerState = iota // execution running: counts as spend
	ledgerCharged                     // committed: counts as spend
	ledgerReleased                    // execution not charged: counts as a call only
)

// bucketSpan is the width of the sums kept per principal. A monthly window
// then costs one addition per hour plus the rows of one partial hour,
// instead of one addition per call in the month.
const bucketSpan = time.Hour

var one = decimal.NewFromInt(1)

// ledgerRow is the part of an execution that limits look at. It lives apart
// from the execution because executions are pruned after a day while monthly
// limits need a month of history.
type ledgerRow struct {
	principal string
	execID    uuid.UUID
	toolID    string
	amount    decimal.Decimal
	createdAt time.Time
	state     ledgerState
	bucket    *ledgerBucket // the sums this row is part of
	pruned    bool          // dropped from ledgerQueue, still to be dropped from its principal's rows
}

// principalLedger is one principal's history, so that measuring a limit never
// touches anyone else's.
type principalLedger struct {
	rows    timeQueue[*ledgerRow]
	buckets timeQueue[*ledgerBucket] // by start
}

// ledgerBucket sums a principal's rows created in one bucketSpan.
type ledgerBucket struct {
	start time.Time
	all   ledgerSums
	tools map[string]*ledgerSums
}

// ledgerSums is what a Limit needs from a set of rows.
type ledgerSums struct {
	calls   int64           // rows, whatever their state: MeasureCalls
	counted int64           // rows not released: what MeasureSpend counts
	spend   decimal.Decimal // the amounts of the counted rows
}

// add adds r to the sums, or takes it out when sign is -1.
func (a *ledgerSums) add(r *ledgerRow, sign int64) {
	a.calls += sign
	if r.state == ledgerReleased {
		return
	}
	a.counted += sign
	if sign > 0 {
		a.spend = a.spend.Add(r.amount)
	} else {
		a.spend = a.spend.Sub(r.amount)
	}
}

// add adds r to the bucket's sums, or takes it out when sign is -1.
func (b *ledgerBucket) add(r *ledgerRow, sign int64) {
	b.all.add(r, sign)
	t := b.tools[r.toolID]
	if t == nil {
		t = &ledgerSums{}
		b.tools[r.toolID] = t
	}
	t.add(r, sign)
	if t.calls == 0 {
		delete(b.tools, r.toolID)
	}
}

// sums returns the bucket's sums for a limit scoped to toolID (all tools
// when empty), or nil when the tool has no rows in it.
func (b *ledgerBucket) sums(toolID string) *ledgerSums {
	if toolID == "" {
		return &b.all
	}
	return b.tools[toolID]
}

// counts reports whether limit l counts row r.
func counts(l storage.Limit, r *ledgerRow) bool {
	if l.ToolID != "" && r.toolID != l.ToolID {
		return false
	}
	return l.Measure == storage.MeasureCalls || r.state != ledgerReleased
}

// addLedgerRow records a new reservation. The caller holds s.mu.
func (s *Store) addLedgerRow(r *ledgerRow) {
	pl := s.ledger[r.principal]
	if pl == nil {
		pl = &principalLedger{}
		s.ledger[r.principal] = pl
	}
	pl.rows.push(r.createdAt, r)

	start := r.createdAt.Truncate(bucketSpan)
	if bs := pl.buckets.since(start); len(bs) > 0 && bs[0].at.Equal(start) {
		r.bucket = bs[0].key
	} else {
		r.bucket = &ledgerBucket{start: start, tools: make(map[string]*ledgerSums)}
		pl.buckets.push(start, r.bucket)
	}
	r.bucket.add(r, 1)

	s.ledgerQueue.push(r.createdAt, r)
	s.ledgerByExec[r.execID] = r
}

// settle moves a reservation to its final state. The caller holds s.mu.
func settle(r *ledgerRow, charged bool) {
	r.bucket.add(r, -1)
	r.state = ledgerReleased
	if charged {
		r.state = ledgerCharged
	}
	r.bucket.add(r, 1)
}

// measure returns what limit l has used of principal's history and the
// creation time of the oldest row it counted. The caller holds s.mu and has
// validated l.
func (s *Store) measure(principal string, l storage.Limit) (used decimal.Decimal, oldest time.Time) {
	pl := s.ledger[principal]
	if pl == nil {
		return decimal.Zero, time.Time{}
	}
	var total ledgerSums

	// Rows between Since and the next bucket boundary are counted one by
	// one; every bucket from that boundary on is counted whole.
	whole := l.Since.Truncate(bucketSpan)
	if whole.Before(l.Since) {
		whole = whole.Add(bucketSpan)
	}
	for _, it := range pl.rows.since(l.Since) {
		if !it.at.Before(whole) {
			break
		}
		if r := it.key; counts(l, r) {
			total.add(r, 1)
			if oldest.IsZero() {
				oldest = r.createdAt
			}
		}
	}
	for _, it := range pl.buckets.since(whole) {
		b := it.key
		sums := b.sums(l.ToolID)
		if sums == nil {
			continue
		}
		if oldest.IsZero() && (sums.counted > 0 || l.Measure == storage.MeasureCalls && sums.calls > 0) {
			oldest = pl.oldestIn(b, l)
		}
		total.calls += sums.calls
		total.spend = total.spend.Add(sums.spend)
	}

	if l.Measure == storage.MeasureCalls {
		return decimal.NewFromInt(total.calls), oldest
	}
	return total.spend, oldest
}

// oldestIn returns the creation time of the first row of bucket b that l
// counts. Only called for a bucket whose sums say there is one.
func (pl *principalLedger) oldestIn(b *ledgerBucket, l storage.Limit) time.Time {
	end := b.start.Add(bucketSpan)
	for _, it := range pl.rows.since(b.start) {
		if !it.at.Before(end) {
			break
		}
		if r := it.key; counts(l, r) {
			return r.createdAt
		}
	}
	return time.Time{}
}

// validateLimits rejects limits whose measure this store cannot count, so a
// typo never silently reads as "nothing used".
func validateLimits(limits []storage.Limit) error {
	for i, l := range limits {
		if l.Measure != storage.MeasureSpend && l.Measure != storage.MeasureCalls {
			return fmt.Errorf("memory: limit %d: unknown measure %q", i, l.Measure)
		}
	}
	return nil
}

// MeasureLimits implements storage.Store.
func (s *Store) MeasureLimits(ctx context.Context, principal string, limits []storage.Limit) ([]decimal.Decimal, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := validateLimits(limits); err != nil {
		return nil, err
	}
	used := make([]decimal.Decimal, len(limits))
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, l := range limits {
		used[i], _ = s.measure(principal, l)
	}
	return used, nil
}
