package server

import (
	"context"
	"encoding/hex"
	"fmt"
	"sync/atomic"

	"github.com/toolgate/toolgate/apikey"
	"github.com/toolgate/toolgate/toolgatetype"
)

// access is who may sign in, and who approves for whom, as one config
// says: the keys of principals and approvers, the principals' approval
// modes and the approvers' principals. It is never changed once made: a
// reload makes another and swaps it in whole (liveAccess), so that a
// request sees one config's, never half of two.
type access struct {
	keys      *apikey.KeyStore
	approvers toolgatetype.StaticApprovers
	// approverIDs are the approvers an access token may decide as.
	approverIDs map[string]bool
	// known are the principals the config names; templateMode is the
	// approval mode of every other, a token subject the "*" template
	// stands for.
	known        map[string]bool
	templateMode toolgatetype.ApprovalMode
}

// newAccess makes the access of principals and approvers. A key given to
// two of them fails.
func newAccess(principals []Principal, approvers []Approver) (*access, error) {
	a := &access{
		keys:        apikey.NewKeyStore(),
		approvers:   toolgatetype.StaticApprovers{Modes: map[string]toolgatetype.ApprovalMode{}, Approvers: map[string][]string{}},
		approverIDs: map[string]bool{},
		known:       map[string]bool{},
	}
	for _, p := range principals {
		if p.ID == PrincipalTemplate {
			a.templateMode = p.ApprovalMode
		} else {
			a.known[p.ID] = true
		}
		for _, k := range p.APIKeys {
			if err := a.keys.AddKey(p.ID, k); err != nil {
				return nil, fmt.Errorf("principal %q: %w", p.ID, err)
			}
		}
		for _, d := range p.APIKeyDigests {
			if err := a.keys.AddKeyDigest(p.ID, hex.EncodeToString(d[:])); err != nil {
				return nil, fmt.Errorf("principal %q: %w", p.ID, err)
			}
		}
		if p.ApprovalMode != "" && p.ID != PrincipalTemplate {
			a.approvers.Modes[p.ID] = p.ApprovalMode
		}
	}
	for _, ap := range approvers {
		for _, k := range ap.Keys {
			if err := a.keys.AddApproverKey(ap.ID, k); err != nil {
				return nil, fmt.Errorf("approver %q: %w", ap.ID, err)
			}
		}
		for _, d := range ap.KeyDigests {
			if err := a.keys.AddApproverKeyDigest(ap.ID, hex.EncodeToString(d[:])); err != nil {
				return nil, fmt.Errorf("approver %q: %w", ap.ID, err)
			}
		}
		a.approvers.Approvers[ap.ID] = ap.Principals
		a.approverIDs[ap.ID] = true
	}
	return a, nil
}

// liveAccess is the access in force: the API keys' Authenticator and
// ApproverAuthenticator of the HTTP API, MCP and the approval pages, the
// gateway's ApproverDirectory, and the approvers tokens may decide as.
// Each lookup reads the access of the latest reload.
type liveAccess struct {
	cur atomic.Pointer[access]
}

// Interface guards.
var (
	_ apikey.Authenticator           = (*liveAccess)(nil)
	_ apikey.ApproverAuthenticator   = (*liveAccess)(nil)
	_ toolgatetype.ApproverDirectory = (*liveAccess)(nil)
)

func (l *liveAccess) Authenticate(ctx context.Context, key string) (string, bool) {
	return l.cur.Load().keys.Authenticate(ctx, key)
}

func (l *liveAccess) AuthenticateApprover(ctx context.Context, key string) (string, bool) {
	return l.cur.Load().keys.AuthenticateApprover(ctx, key)
}

// ApprovalMode is the principal's own mode, or the template's for a
// principal the config does not name: only token subjects are such.
func (l *liveAccess) ApprovalMode(ctx context.Context, principal string) (toolgatetype.ApprovalMode, error) {
	a := l.cur.Load()
	if !a.known[principal] {
		return a.templateMode, nil
	}
	return a.approvers.ApprovalMode(ctx, principal)
}

func (l *liveAccess) ApprovedPrincipals(ctx context.Context, approver string) ([]string, error) {
	return l.cur.Load().approvers.ApprovedPrincipals(ctx, approver)
}

// isApprover reports whether id is a configured approver, for the
// verifier of access tokens.
func (l *liveAccess) isApprover(id string) bool { return l.cur.Load().approverIDs[id] }
