package memory

import (
	"context"
	"fmt"
	"sort"
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

// levels are the widths of the sums kept per principal, finest first. A
// monthly window then costs at most one partial hour of rows, 23 hour sums
// and 31 day sums, instead of one addition per call in the month.
var levels = [...]time.Duration{time.Hour, 24 * time.Hour}

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
	buckets   [len(levels)]*ledgerBucket // the sums this row is part of, one per level
	pruned    bool                       // dropped from ledgerQueue, still to be dropped from its principal's rows
}

// principalLedger is one principal's history, so that measuring a limit never
// touches anyone else's.
type principalLedger struct {
	rows    timeQueue[*ledgerRow]
	buckets [len(levels)]timeQueue[*ledgerBucket] // per level, by start
}

// ledgerBucket sums a principal's rows created in one span of a level.
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

// rows returns how many of the summed rows a limit of this measure counts.
func (a *ledgerSums) rows(spend bool) int64 {
	if spend {
		return a.counted
	}
	return a.calls
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

// addToBuckets adds r, or takes it out when sign is -1, to its bucket at every level.
func (r *ledgerRow) addToBuckets(sign int64) {
	for _, b := range r.buckets {
		b.add(r, sign)
	}
}

// counts reports whether limit l counts row r.
func counts(l storage.Limit, r *ledgerRow) bool {
	if l.ToolID != "" && r.toolID != l.ToolID {
		return false
	}
	return l.Measure == storage.MeasureCalls || r.state != ledgerReleased
}

// ceil rounds t up to a multiple of span.
func ceil(t time.Time, span time.Duration) time.Time {
	u := t.Truncate(span)
	if u.Before(t) {
		u = u.Add(span)
	}
	return u
}

// addLedgerRow records a new reservation. The caller holds s.mu.
func (s *Store) addLedgerRow(r *ledgerRow) {
	pl := s.ledger[r.principal]
	if pl == nil {
		pl = &principalLedger{}
		s.ledger[r.principal] = pl
	}
	pl.rows.push(r.createdAt, r)
	for lv, span := range levels {
		start := r.createdAt.Truncate(span)
		q := &pl.buckets[lv]
		if bs := q.since(start); len(bs) > 0 && bs[0].at.Equal(start) {
			r.buckets[lv] = bs[0].key
		} else {
			r.buckets[lv] = &ledgerBucket{start: start, tools: make(map[string]*ledgerSums)}
			q.push(start, r.buckets[lv])
		}
	}
	r.addToBuckets(1)

	s.ledgerQueue.push(r.createdAt, r)
	s.ledgerByExec[r.execID] = r
}

// settle moves a reservation to its final state. The caller holds s.mu.
func settle(r *ledgerRow, charged bool) {
	r.addToBuckets(-1)
	r.state = ledgerReleased
	if charged {
		r.state = ledgerCharged
	}
	r.addToBuckets(1)
}

// measure returns what limit l has used of principal's history and the
// creation time of the oldest row it counted. The caller holds s.mu and has
// validated l.
func (s *Store) measure(principal string, l storage.Limit) (used decimal.Decimal, oldest time.Time) {
	if l.Budget != "" {
		return s.measureBudget(l)
	}
	pl := s.ledger[principal]
	if pl == nil {
		return decimal.Zero, time.Time{}
	}
	var (
		isSpend = l.Measure == storage.MeasureSpend
		calls   int64
		spend   decimal.Decimal
	)

	// The window is cut at the next hour and the next day after Since:
	// single rows up to the hour, hour sums up to the day, day sums after.
	edge := ceil(l.Since, levels[0])
	rows := pl.rows.since(l.Since)
	if !isSpend && l.ToolID == "" {
		// Every row counts towards a call limit over all tools, so the
		// partial hour, which is most of a rate window, costs a binary search
		// rather than a visit per call: a busy caller's minute and hour
		// limits would otherwise cost more with every call they allow.
		n := sort.Search(len(rows), func(i int) bool { return !rows[i].at.Before(edge) })
		calls = int64(n)
		if n > 0 {
			oldest = rows[0].key.createdAt
		}
		rows = nil
	}
	for _, it := range rows {
		if !it.at.Before(edge) {
			break
		}
		if r := it.key; counts(l, r) {
			calls++
			if isSpend {
				spend = spend.Add(r.amount)
			}
			if oldest.IsZero() {
				oldest = r.createdAt
			}
		}
	}
	for lv := range levels {
		last := lv+1 == len(levels) // runs to the end of history
		var end time.Time
		if !last {
			end = ceil(edge, levels[lv+1])
		}
		for _, it := range pl.buckets[lv].since(edge) {
			if !last && !it.at.Before(end) {
				break
			}
			sums := it.key.sums(l.ToolID)
			if sums == nil {
				continue
			}
			n := sums.rows(isSpend)
			calls += n
			if isSpend {
				spend = spend.Add(sums.spend)
			}
			if oldest.IsZero() && n > 0 {
				oldest = pl.oldestIn(lv, it.key, l)
			}
		}
		edge = end
	}

	if isSpend {
		return spend, oldest
	}
	return decimal.NewFromInt(calls), oldest
}

// oldestIn returns the creation time of the first row in bucket b of level
// lv that l counts, descending through the finer levels so that it never
// scans more than one hour of rows. Only called for a bucket whose sums say
// there is such a row.
func (pl *principalLedger) oldestIn(lv int, b *ledgerBucket, l storage.Limit) time.Time {
	end := b.start.Add(levels[lv])
	if lv == 0 {
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
	for _, it := range pl.buckets[lv-1].since(b.start) {
		if !it.at.Before(end) {
			break
		}
		if sums := it.key.sums(l.ToolID); sums != nil && sums.rows(l.Measure == storage.MeasureSpend) > 0 {
			return pl.oldestIn(lv-1, it.key, l)
		}
	}
	return time.Time{}
}

// validateLimits rejects limits whose measure or first day this store
// cannot count, so a typo never silently reads as "nothing used".
func validateLimits(limits []storage.Limit) error {
	for i, l := range limits {
		if l.Measure != storage.MeasureSpend && l.Measure != storage.MeasureCalls {
			return fmt.Errorf("memory: limit %d: unknown measure %q", i, l.Measure)
		}
		if err := validateFromDay(l); err != nil {
			return fmt.Errorf("memory: limit %d: %w", i, err)
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
