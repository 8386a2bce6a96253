package ruling

import (
	"fmt"
	"slices"
	"strings"

	"github.com/toolgate/toolgate/internal/budgets"
	"github.com/toolgate/toolgate/rules"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// Decided is what the deny and ask rules decided of one call: every rule
// that matched (hide rules in audit mode among them), the deny that
// refuses it, and whether a person must approve it and who. A nil
// *Decided is a call no rule matched, the common case, which costs no
// allocation; every method takes it.
type Decided struct {
	matches []rules.Match
	denied  *rules.Match
	asked   bool
	// approvers are the approvers the ask rules name, who alone may
	// approve the call; none leaves it to the caller's approvers.
	approvers []string
}

// Of is the decision d made, nil when no rule matched.
func Of(d rules.Decision) *Decided {
	if len(d.Matches) == 0 {
		return nil
	}
	r := &Decided{matches: d.Matches, denied: d.Denied()}
	r.asked, r.approvers = d.Asked()
	return r
}

// Refusal is the call's refusal by a deny rule; nil when none denies it.
func (r *Decided) Refusal() error {
	if r == nil || r.denied == nil {
		return nil
	}
	return Denied(r.denied)
}

// Asks reports whether a rule asks a person to approve the call.
func (r *Decided) Asks() bool { return r != nil && r.asked }

// All are the rules that matched; none for a nil *Decided.
func (r *Decided) All() []rules.Match {
	if r == nil {
		return nil
	}
	return r.matches
}

// WithHidden adds the audit hide rules that matched the call's lookup.
func (r *Decided) WithHidden(ms []rules.Match) *Decided {
	if len(ms) == 0 {
		return r
	}
	if r == nil {
		r = &Decided{}
	}
	r.matches = append(slices.Clone(ms), r.matches...)
	return r
}

// NamedApprovers are the approvers the ask rules name, for an approval
// request only they may decide; nil when none asks or none names any.
func (r *Decided) NamedApprovers() []string {
	if !r.Asks() {
		return nil
	}
	return r.approvers
}

// Apply is policy p as the rules decided r: the rules listed, a deny
// making the tool not callable for this call with its reason, and an ask
// raising the requirement to per_call, whatever the caller's standing
// approval.
func Apply(p toolgatetype.Policy, r *Decided) toolgatetype.Policy {
	if r == nil {
		return p
	}
	p.Rules = PolicyRules(r.matches)
	if r.denied != nil {
		p.Callable, p.EligibleForAutoCall = false, false
		p.Reasons = append(slices.Clone(p.Reasons), Reason(r.denied))
	}
	if r.asked {
		switch p.Approval.Requirement {
		case toolgatetype.RequirementCoveredByUserPolicy, toolgatetype.RequirementFirstUse:
			p.Approval.Requirement = toolgatetype.RequirementPerCall
		}
		p.EligibleForAutoCall = false
	}
	return p
}

// GrantedBy refuses a grant decided by an approver the ask rules do not
// name, when they name some: only they may approve the call.
func (r *Decided) GrantedBy(grant *storage.ApprovalRequest) error {
	if !r.Asks() || len(r.approvers) == 0 || grant == nil || slices.Contains(r.approvers, grant.DecidedBy) {
		return nil
	}
	return &toolgatetype.Error{Code: toolgatetype.CodeApprovalGrantMismatch,
		Message: fmt.Sprintf("the approval grant was decided by %s, but only %s may approve this call%s",
			grant.DecidedBy, strings.Join(r.approvers, ", "), r.AskedBy())}
}

// AskedBy names the ask rules that require a person's approval, for a
// refusal's message; "" when none does.
func (r *Decided) AskedBy() string {
	if !r.Asks() {
		return ""
	}
	var names []string
	for _, m := range r.matches {
		if m.Effect == rules.Ask && m.Enforced() {
			names = append(names, m.Name)
		}
	}
	return ", asked by rule " + strings.Join(names, ", ")
}

// BudgetIDs are the ids of nodes, the budgets a caller counts in, as
// rules read them.
func BudgetIDs(nodes []*budgets.Node) []string {
	if len(nodes) == 0 {
		return nil
	}
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.ID
	}
	return out
}
