package ruling

import (
	"strings"
	"sync"

	"github.com/toolgate/toolgate/rules"
	"github.com/toolgate/toolgate/toolgatetype"
)

// maxStatics bounds the static decisions kept: past it they are all
// dropped and made again as calls come, which costs a rule evaluation
// each, never a wrong decision.
const maxStatics = 50_000

// Statics keeps, per set of rules narrowed to a tool and per caller, what
// the rules that read neither the input nor the time decided
// (rules.Static): an agent quotes and calls one tool again and again as
// one principal, and those rules decide each call alike. Only a caller
// with no token claims is kept, whose id, budgets and approval mode are
// all its rules read of it; a token's claims may differ from one token to
// the next.
type Statics struct {
	mu sync.Mutex
	m  map[staticKey]*rules.Static
}

type staticKey struct {
	set    *rules.Set
	caller string
}

// Of is set's static decision for the caller s.Principal, made by
// DecideStatic when not kept; nil when the caller's decision is not one
// to keep (it has claims) or the set has no such rule.
func (st *Statics) Of(set *rules.Set, s *rules.Subject, mode toolgatetype.ApprovalMode) *rules.Static {
	p := s.Principal
	if len(p.Claims) > 0 || !set.HasStatic() {
		return nil
	}
	k := staticKey{set: set, caller: callerKey(p, mode)}
	st.mu.Lock()
	got, ok := st.m[k]
	st.mu.Unlock()
	if ok {
		return got
	}
	made := set.DecideStatic(s)
	st.mu.Lock()
	if st.m == nil || len(st.m) >= maxStatics {
		st.m = map[staticKey]*rules.Static{}
	}
	st.m[k] = made
	st.mu.Unlock()
	return made
}

// callerKey is what the static rules read of a caller without claims.
func callerKey(p *rules.Principal, mode toolgatetype.ApprovalMode) string {
	var b strings.Builder
	b.WriteString(p.ID)
	b.WriteByte(0)
	b.WriteString(string(mode))
	for _, id := range p.Budgets {
		b.WriteByte(0)
		b.WriteString(id)
	}
	return b.String()
}
