package memory

import (
	"bytes"
	"slices"
	"sort"
	"time"

	"github.com/google/uuid"

	"github.com/toolgate/toolgate/storage"
)

// The listings (ListExecutions, ListApprovalRequests) page newest first by
// position, the order a database gives (created_at, id). Each principal's
// entries are kept oldest first in that order, so a new entry is appended
// and a page walks each listed principal's entries back from a binary
// search for the cursor, at most a page from each; newestFirst merges what
// the walks gave into the page.

// position is where an entry stands in a listing: its creation time, then
// its id's bytes.
type position struct {
	at time.Time
	id uuid.UUID
}

// before reports whether p comes before q: created earlier, or at the same
// instant with the smaller id.
func (p position) before(q position) bool {
	if !p.at.Equal(q.at) {
		return p.at.Before(q.at)
	}
	return bytes.Compare(p.id[:], q.id[:]) < 0
}

// insert puts v at its place in items, oldest first by pos. Entries arrive
// in roughly increasing time, so the place is almost always the end.
func insert[T any](items []T, v T, pos func(T) position) []T {
	at := pos(v)
	if n := len(items); n == 0 || pos(items[n-1]).before(at) {
		return append(items, v)
	}
	i := sort.Search(len(items), func(i int) bool { return at.before(pos(items[i])) })
	return slices.Insert(items, i, v)
}

// cut is the index after the last of items, oldest first by pos, that comes
// before cursor: a page continues with the entries before the last of the
// previous page. With no cursor it is len(items).
func cut[T any](items []T, cursor *position, pos func(T) position) int {
	if cursor == nil {
		return len(items)
	}
	return sort.Search(len(items), func(i int) bool { return !pos(items[i]).before(*cursor) })
}

// newestFirst orders the entries the principals' walks gave newest first and
// keeps the page: the first limit of them.
func newestFirst[T any](out []T, limit int, pos func(*T) position) []T {
	slices.SortFunc(out, func(a, b T) int {
		pa, pb := pos(&a), pos(&b)
		switch {
		case pb.before(pa):
			return -1
		case pa.before(pb):
			return 1
		}
		return 0
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out
}

// execPos is where e stands in ListExecutions.
func execPos(e *storage.Execution) position { return position{e.CreatedAt, e.ID} }

// requestPos is where r stands in ListApprovalRequests.
func requestPos(r *storage.ApprovalRequest) position { return position{r.CreatedAt, r.ID} }

// queuedRequestPos is where the request a principal's queue entry names
// stands: it was queued by its creation time and id.
func queuedRequestPos(t timed[uuid.UUID]) position { return position{t.at, t.key} }

// executionCursor and requestCursor are a listing's cursor as a position;
// nil when the listing starts with the newest.
func executionCursor(c *storage.ExecutionPosition) *position {
	if c == nil {
		return nil
	}
	return &position{c.CreatedAt, c.ID}
}

func requestCursor(c *storage.ApprovalCursor) *position {
	if c == nil {
		return nil
	}
	return &position{c.CreatedAt, c.ID}
}
