package memory

import (
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// A budget is shared by every principal who counts in it, so its history
// cannot live in any one principal's ledger: each budget keeps its own,
// one row per call and budget, summed per calendar day of the budget's
// time zone (the Day the gateway gave). Spend limits then add up the days
// of their window, at most 31 sums for a month, and SpendSummary reads the
// charged sums of the days asked for, grouped three ways, without a row
// visited. A queue by creation time serves call limits, whose windows are
// a minute long.

// budgetRow is one call's part in one budget.
type budgetRow struct {
	execID    uuid.UUID
	principal string
	toolID    string
	toolSlug  string
	amount    decimal.Decimal
	createdAt time.Time
	state     ledgerState
	day       *budgetDay // the day it counts on, while it is kept there
}

// budgetLedger is one budget's history.
type budgetLedger struct {
	days  []*budgetDay          // ascending by day
	calls timeQueue[*budgetRow] // every row by creation, for call limits
}

// budgetDay is what a budget holds on one of its calendar days.
type budgetDay struct {
	day  string       // YYYY-MM-DD
	rows []*budgetRow // in admission order
	// held sums the rows reserved or charged, what spend limits count; by
	// tool id too.
	held       heldSum
	heldByTool map[string]*heldSum
	// charged sums what SpendSummary shows: charged rows only.
	charged          storage.SpendGroup
	chargedPrincipal map[string]*storage.SpendGroup
	chargedSlug      map[string]*storage.SpendGroup
}

// heldSum is the amount of some rows and how many there are.
type heldSum struct {
	amount decimal.Decimal
	rows   int64
}

func (h *heldSum) add(amount decimal.Decimal, sign int64) {
	h.rows += sign
	if sign > 0 {
		h.amount = h.amount.Add(amount)
	} else {
		h.amount = h.amount.Sub(amount)
	}
}

// addCharge adds a charged amount to a group, or takes it out when sign is -1.
func addCharge(g *storage.SpendGroup, amount decimal.Decimal, sign int64) {
	g.Count += sign
	if sign > 0 {
		g.TotalUSD = g.TotalUSD.Add(amount)
	} else {
		g.TotalUSD = g.TotalUSD.Sub(amount)
	}
}

// chargeIn adds to the group of key in m, creating it, and drops it once
// it holds nothing.
func chargeIn(m map[string]*storage.SpendGroup, key string, amount decimal.Decimal, sign int64) {
	g := m[key]
	if g == nil {
		g = &storage.SpendGroup{Key: key, TotalUSD: decimal.Zero}
		m[key] = g
	}
	addCharge(g, amount, sign)
	if g.Count == 0 {
		delete(m, key)
	}
}

// add counts r in the day's sums as its state says, or takes it out when
// sign is -1.
func (d *budgetDay) add(r *budgetRow, sign int64) {
	if r.state == ledgerReleased {
		return
	}
	d.held.add(r.amount, sign)
	t := d.heldByTool[r.toolID]
	if t == nil {
		t = &heldSum{}
		d.heldByTool[r.toolID] = t
	}
	t.add(r.amount, sign)
	if t.rows == 0 {
		delete(d.heldByTool, r.toolID)
	}
	if r.state != ledgerCharged {
		return
	}
	addCharge(&d.charged, r.amount, sign)
	chargeIn(d.chargedPrincipal, r.principal, r.amount, sign)
	chargeIn(d.chargedSlug, r.toolSlug, r.amount, sign)
}

// heldFor returns the day's held sum for a limit on toolID (every tool
// when empty), nil when the tool has none.
func (d *budgetDay) heldFor(toolID string) *heldSum {
	if toolID == "" {
		return &d.held
	}
	return d.heldByTool[toolID]
}

// dayAt returns the ledger's day, adding it in order when it is new.
// Calls arrive on today's day, so the search almost always ends at the last.
func (bl *budgetLedger) dayAt(day string) *budgetDay {
	i := sort.Search(len(bl.days), func(i int) bool { return bl.days[i].day >= day })
	if i < len(bl.days) && bl.days[i].day == day {
		return bl.days[i]
	}
	d := &budgetDay{
		day:              day,
		heldByTool:       make(map[string]*heldSum),
		charged:          storage.SpendGroup{Key: day, TotalUSD: decimal.Zero},
		chargedPrincipal: make(map[string]*storage.SpendGroup),
		chargedSlug:      make(map[string]*storage.SpendGroup),
	}
	bl.days = append(bl.days, nil)
	copy(bl.days[i+1:], bl.days[i:])
	bl.days[i] = d
	return d
}

// from returns the days on or after day (all of them when empty).
func (bl *budgetLedger) from(day string) []*budgetDay {
	i := sort.Search(len(bl.days), func(i int) bool { return bl.days[i].day >= day })
	return bl.days[i:]
}

// validateBudgets rejects a call's budgets that no limit could count
// rightly: an empty id, a day that is not YYYY-MM-DD, or a budget named
// twice, which would count the call twice in it.
func validateBudgets(days []storage.BudgetDay) error {
	seen := make(map[string]struct{}, len(days))
	for i, bd := range days {
		if bd.Budget == "" {
			return fmt.Errorf("memory: budget %d has no id", i)
		}
		if _, err := time.Parse(time.DateOnly, bd.Day); err != nil {
			return fmt.Errorf("memory: budget %q: day %q is not YYYY-MM-DD", bd.Budget, bd.Day)
		}
		if _, dup := seen[bd.Budget]; dup {
			return fmt.Errorf("memory: budget %q is named twice", bd.Budget)
		}
		seen[bd.Budget] = struct{}{}
	}
	return nil
}

// validateFromDay rejects a FromDay that would be compared as a day
// without being one, or that the limit would not look at.
func validateFromDay(l storage.Limit) error {
	if l.FromDay == "" {
		return nil
	}
	if l.Budget == "" || l.Measure != storage.MeasureSpend {
		return errors.New("FromDay is only for a budget's spend limit")
	}
	if _, err := time.Parse(time.DateOnly, l.FromDay); err != nil {
		return fmt.Errorf("FromDay %q is not YYYY-MM-DD", l.FromDay)
	}
	return nil
}

// addBudgetRows records a new execution in each of its budgets. The
// caller holds s.mu.
func (s *Store) addBudgetRows(e *storage.Execution) {
	if len(e.Budgets) == 0 {
		return
	}
	rows := make([]*budgetRow, len(e.Budgets))
	for i, bd := range e.Budgets {
		bl := s.budgets[bd.Budget]
		if bl == nil {
			bl = &budgetLedger{}
			s.budgets[bd.Budget] = bl
		}
		r := &budgetRow{
			execID:    e.ID,
			principal: e.Principal,
			toolID:    e.ToolID,
			toolSlug:  e.ToolSlug,
			amount:    e.AmountUSD,
			createdAt: e.CreatedAt,
			state:     ledgerReserved,
			day:       bl.dayAt(bd.Day),
		}
		r.day.rows = append(r.day.rows, r)
		r.day.add(r, 1)
		bl.calls.push(r.createdAt, r)
		rows[i] = r
	}
	s.budgetByExec[e.ID] = rows
}

// settleBudgets charges or releases an execution's reservation in every
// budget it counts in. A row is settled once, so the execution's entry
// goes. The caller holds s.mu.
func (s *Store) settleBudgets(id uuid.UUID, charged bool) {
	for _, r := range s.budgetByExec[id] {
		r.day.add(r, -1)
		r.state = ledgerReleased
		if charged {
			r.state = ledgerCharged
		}
		r.day.add(r, 1)
	}
	delete(s.budgetByExec, id)
}

// measureBudget returns what budget limit l has used, every principal's
// calls together, and the creation time of the oldest row it counted.
// The caller holds s.mu.
func (s *Store) measureBudget(l storage.Limit) (used decimal.Decimal, oldest time.Time) {
	bl := s.budgets[l.Budget]
	if bl == nil {
		return decimal.Zero, time.Time{}
	}
	if l.Measure == storage.MeasureCalls {
		rows := bl.calls.since(l.Since)
		if l.ToolID == "" {
			if len(rows) > 0 {
				oldest = rows[0].key.createdAt
			}
			return decimal.NewFromInt(int64(len(rows))), oldest
		}
		var n int64
		for _, it := range rows {
			if it.key.toolID == l.ToolID {
				n++
				if oldest.IsZero() {
					oldest = it.key.createdAt
				}
			}
		}
		return decimal.NewFromInt(n), oldest
	}

	used = decimal.Zero
	for _, d := range bl.from(l.FromDay) {
		h := d.heldFor(l.ToolID)
		if h == nil || h.rows == 0 {
			continue
		}
		used = used.Add(h.amount)
		if oldest.IsZero() {
			// A budget's days all keep one zone, so the first day that
			// counts holds the oldest row counted.
			oldest = d.oldestHeld(l.ToolID)
		}
	}
	return used, oldest
}

// oldestHeld returns the creation time of the day's oldest row that a
// spend limit on toolID counts.
func (d *budgetDay) oldestHeld(toolID string) time.Time {
	var oldest time.Time
	for _, r := range d.rows {
		if r.state == ledgerReleased || (toolID != "" && r.toolID != toolID) {
			continue
		}
		if oldest.IsZero() || r.createdAt.Before(oldest) {
			oldest = r.createdAt
		}
	}
	return oldest
}

// budgetSummary sums a budget's charged spend on the days q asks for. The
// caller holds s.mu; the groups it returns are the caller's own.
func (s *Store) budgetSummary(q storage.SpendQuery) map[string]*storage.SpendGroup {
	groups := map[string]*storage.SpendGroup{}
	bl := s.budgets[q.Budget]
	if bl == nil {
		return groups
	}
	merge := func(g storage.SpendGroup) {
		out := groups[g.Key]
		if out == nil {
			out = &storage.SpendGroup{Key: g.Key, TotalUSD: decimal.Zero}
			groups[g.Key] = out
		}
		out.TotalUSD = out.TotalUSD.Add(g.TotalUSD)
		out.Count += g.Count
	}
	for _, d := range bl.from(q.FromDay) {
		if q.UntilDay != "" && d.day >= q.UntilDay {
			break
		}
		switch q.GroupBy {
		case toolgatetype.SpendByDay:
			if d.charged.Count > 0 {
				merge(d.charged)
			}
		case toolgatetype.SpendByPrincipal:
			for _, g := range d.chargedPrincipal {
				merge(*g)
			}
		default:
			for _, g := range d.chargedSlug {
				merge(*g)
			}
		}
	}
	return groups
}

// pruneBudgets drops the budget history of days before the day ahead of
// before's UTC date: a budget in a zone ahead of UTC began its month up to
// a day earlier, and that month is still counted. Rows of calls still
// running or ambiguous stay with their day. Call queues forget what was
// created before before, older than any call window. It returns how many
// rows it dropped from their days, at most limit. The caller holds s.mu.
func (s *Store) pruneBudgets(before time.Time, limit int) int {
	if before.IsZero() || limit <= 0 {
		return 0
	}
	cutoff := before.UTC().AddDate(0, 0, -1).Format(time.DateOnly)
	n := 0
	for id, bl := range s.budgets {
		keptDays := bl.days[:0]
		for i, d := range bl.days {
			if d.day >= cutoff || n >= limit {
				keptDays = append(keptDays, bl.days[i:]...)
				break
			}
			kept := d.rows[:0]
			for _, r := range d.rows {
				if n >= limit || s.reserving(r.execID) {
					kept = append(kept, r)
					continue
				}
				d.add(r, -1)
				r.day = nil
				delete(s.budgetByExec, r.execID)
				n++
			}
			clear(d.rows[len(kept):])
			d.rows = kept
			if len(kept) > 0 {
				keptDays = append(keptDays, d)
			}
		}
		clear(bl.days[len(keptDays):])
		bl.days = keptDays
		bl.calls.drain(before, limit, func(*budgetRow) verdict { return drop })
		if len(bl.days) == 0 && bl.calls.len() == 0 {
			delete(s.budgets, id)
		}
	}
	return n
}
