package mcpserver

import (
	"context"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/toolgatetype"
)

// decisionPoll is how often the approval requests that sessions wait on
// are looked up in the store. A decision may be made on any instance of
// the gateway, and the store is where every instance sees it.
const decisionPoll = time.Second

// decisions tells the sessions of clients before protocol 2026-07-28 that
// were sent to an approval page (the URL-elicitation-required error) when
// the request there is decided or expires, with
// notifications/elicitation/complete naming it, so that they make the call
// again then rather than guess when. Nothing watches while no session
// waits.
type decisions struct {
	g *gateway

	mu      sync.Mutex
	waiting map[string]*waitingRequest // by approval request id
	running bool                       // a watch goroutine is running
	// sessions are those waiting on any request, each forgotten when it
	// ends.
	sessions map[*mcp.ServerSession]bool
}

// waitingRequest is an approval request sessions wait on.
type waitingRequest struct {
	principal string
	expires   time.Time
	sessions  map[*mcp.ServerSession]struct{}
}

// wait has ss told when request r is decided.
func (d *decisions) wait(ss *mcp.ServerSession, principal string, r *toolgatetype.ApprovalRequest) {
	if ss == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.waiting == nil {
		d.waiting = map[string]*waitingRequest{}
	}
	w := d.waiting[r.ID]
	if w == nil {
		w = &waitingRequest{principal: principal, expires: r.ExpiresAt, sessions: map[*mcp.ServerSession]struct{}{}}
		d.waiting[r.ID] = w
	}
	w.sessions[ss] = struct{}{}
	if d.sessions == nil {
		d.sessions = map[*mcp.ServerSession]bool{}
	}
	if !d.sessions[ss] {
		d.sessions[ss] = true
		go func() {
			_ = ss.Wait()
			d.forget(ss)
		}()
	}
	if !d.running {
		d.running = true
		go d.watch()
	}
}

// forget stops waiting for ss, which ended: a request no session waits on
// any more is no longer looked up.
func (d *decisions) forget(ss *mcp.ServerSession) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.sessions, ss)
	for id, w := range d.waiting {
		delete(w.sessions, ss)
		if len(w.sessions) == 0 {
			delete(d.waiting, id)
		}
	}
}

// watch looks the waited-on requests up until none is left, or the server
// closes.
func (d *decisions) watch() {
	tick := time.NewTicker(decisionPoll)
	defer tick.Stop()
	for {
		select {
		case <-d.g.closing.Done():
			d.mu.Lock()
			d.running = false
			d.mu.Unlock()
			return
		case <-tick.C:
		}
		if !d.check() {
			return
		}
	}
}

// check tells the sessions waiting on each request that is no longer
// pending, and reports whether any still wait; when none does, the watch
// ends.
func (d *decisions) check() bool {
	d.mu.Lock()
	ids := make(map[string]string, len(d.waiting)) // id -> principal
	for id, w := range d.waiting {
		ids[id] = w.principal
	}
	d.mu.Unlock()
	for id, principal := range ids {
		if !d.decided(id, principal) {
			continue
		}
		d.mu.Lock()
		w := d.waiting[id]
		delete(d.waiting, id)
		d.mu.Unlock()
		if w == nil {
			continue // its sessions ended meanwhile
		}
		for ss := range w.sessions {
			// Detached from any request, so the SDK sends it on the
			// session's own event stream; a session gone since is no
			// matter.
			notify, cancel := context.WithTimeout(context.Background(), decisionPoll)
			_ = ss.NotifyElicitationComplete(notify, &mcp.ElicitationCompleteParams{ElicitationID: id})
			cancel()
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.waiting) == 0 {
		d.running = false
		return false
	}
	return true
}

// decided reports whether approval request id is no longer pending:
// decided, used, or expired (or gone from the store). A store that does
// not answer is asked again next time, until the request would have
// expired.
func (d *decisions) decided(id, principal string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), decisionPoll)
	defer cancel()
	r, err := d.g.gw.ApprovalRequest(ctx, principal, id)
	switch {
	case err == nil:
		return r.Status != toolgatetype.ApprovalStatusPending
	case toolgatetype.IsCode(err, toolgatetype.CodeApprovalRequestNotFound):
		return true
	}
	d.mu.Lock()
	var expires time.Time
	if w := d.waiting[id]; w != nil {
		expires = w.expires
	}
	d.mu.Unlock()
	d.g.log.Warn("looking up an approval request a session waits on failed", "approval_request", id, "error", err)
	return !time.Now().Before(expires)
}
