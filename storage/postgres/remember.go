package postgres

import (
	"errors"
	"maps"
	"sync"

	"github.com/google/uuid"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// maxRemembered bounds each of memo's maps. Past it, an arbitrary entry is
// forgotten for each new one: forgetting only costs a call its read round
// trip, and a bound keeps a busy instance's memory flat.
const maxRemembered = 16384

// memo is what a Store remembers so that a call on the instance that quoted
// it need not read before its admission (AdmitCall): the quotes it
// created, and the spend controls and standing approvals its last reads
// found. The quote's batch reads both afresh, so what a call is answered
// from memory is what its own quote saw.
//
// Nothing here is trusted: another instance may have changed any of it.
// The admission statement itself checks that the spend controls and
// approval a call was decided on are still the database's, and otherwise
// admits nothing and forgets them (errStale); AdmitCall then reads and
// decides again, from the database. A remembered quote needs no such
// check: a quote changes only by being used, which admission checks
// whatever the memory says, and by living longer once an approval request
// is made of it, which can only make a remembered quote look expired when
// it is not: a decision that refuses what memory answered is made again on
// the database's answer (AdmitCall).
type memo struct {
	mu        sync.Mutex
	quotes    map[uuid.UUID]storage.Quote
	controls  map[string]*toolgatetype.SpendControls // nil: the principal has none
	approvals map[approvalKey]*storage.Approval      // nil: no standing approval
}

type approvalKey struct{ principal, toolID string }

func newMemo() *memo {
	return &memo{
		quotes:    map[uuid.UUID]storage.Quote{},
		controls:  map[string]*toolgatetype.SpendControls{},
		approvals: map[approvalKey]*storage.Approval{},
	}
}

// put stores v under k, first forgetting an arbitrary entry when m is full.
func put[K comparable, V any](m map[K]V, k K, v V) {
	if _, ok := m[k]; !ok && len(m) >= maxRemembered {
		for old := range m {
			delete(m, old)
			break
		}
	}
	m[k] = v
}

// quoteCreated remembers a quote this Store has just stored.
func (m *memo) quoteCreated(q storage.Quote) {
	if q.State == "" {
		q.State = storage.QuoteOpen
	}
	m.mu.Lock()
	put(m.quotes, q.ID, q)
	m.mu.Unlock()
}

// forgetQuote forgets a quote once a call has been admitted on it or
// refused: it is used, or the refusal is decided again on fresh reads.
func (m *memo) forgetQuote(id uuid.UUID) {
	m.mu.Lock()
	delete(m.quotes, id)
	m.mu.Unlock()
}

// read remembers what a batch read from the database.
func (m *memo) read(r storage.Reads, res storage.ReadResult) {
	if !r.SpendControls && !r.Approval {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if r.SpendControls {
		put(m.controls, r.Principal, copyControls(res.SpendControls))
	}
	if r.Approval {
		var a *storage.Approval
		if res.Approval != nil {
			c := *res.Approval
			a = &c
		}
		put(m.approvals, approvalKey{r.Principal, r.ToolID}, a)
	}
}

// forget drops what is remembered of the principal's spend controls and,
// when toolID is set, of its approval of that tool: this Store changed it,
// or a call found it out of date.
func (m *memo) forget(principal, toolID string) {
	m.mu.Lock()
	delete(m.controls, principal)
	if toolID != "" {
		delete(m.approvals, approvalKey{principal, toolID})
	}
	m.mu.Unlock()
}

// recalled is a call's reads as memory answered them, and whether the
// approval was asked for, so that a nil Approval means none rather than
// not asked: what the call's admission checks (see admitSQL).
type recalled struct {
	read         storage.ReadResult
	approvalRead bool
}

// errStale is an admission's refusal of a call decided on what memory
// recalled and the database no longer holds; nothing was written.
var errStale = errors.New("postgres: remembered reads out of date")

// answer returns a call's reads r answered from memory, or false when r
// asks for anything not remembered or not rememberable: a grant, limits,
// a quote to create, a key's record, or no quote or spend controls at all
// (each call's reads name its quote and ask for the controls, so a
// remembered answer always says what the controls are).
func (m *memo) answer(r storage.Reads) (recalled, bool) {
	if !r.SpendControls || r.QuoteID == uuid.Nil || r.GrantID != uuid.Nil ||
		len(r.Limits) > 0 || r.CreateQuote != nil || r.Key != "" {
		return recalled{}, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	q, ok := m.quotes[r.QuoteID]
	if !ok {
		return recalled{}, false
	}
	c, ok := m.controls[r.Principal]
	if !ok {
		return recalled{}, false
	}
	res := recalled{read: storage.ReadResult{Quote: &q, SpendControls: copyControls(c)}, approvalRead: r.Approval}
	if r.Approval {
		a, ok := m.approvals[approvalKey{r.Principal, r.ToolID}]
		if !ok {
			return recalled{}, false
		}
		if a != nil {
			c := *a
			res.read.Approval = &c
		}
	}
	return res, true
}

// copyControls copies c deeply enough that a caller changing its answer
// does not change what is remembered.
func copyControls(c *toolgatetype.SpendControls) *toolgatetype.SpendControls {
	if c == nil {
		return nil
	}
	out := *c
	out.Tools = maps.Clone(c.Tools)
	return &out
}
