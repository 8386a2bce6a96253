package rules

// Effect is what a rule does to a call it matches.
type Effect string

const (
	// Deny refuses the call (403 rule_denied).
	Deny Effect = "deny"
	// Ask requires a person's approval of the call, from the approvers the
	// rule names, whatever the caller's approval mode.
	Ask Effect = "ask"
	// Hide makes the tool absent for the caller: not listed, and
	// tool_not_found to a quote, call or approval request.
	Hide Effect = "hide"
)

// Mode says whether a rule acts or is only watched.
type Mode string

const (
	// Enforce, the default, applies the rule's effect.
	Enforce Mode = "enforce"
	// Audit changes nothing: the rule's matches are counted and written
	// in the audit record, so a team can watch a rule before it bites.
	Audit Mode = "audit"
)

// Rule is one rule of the organization's, as the config gives it.
type Rule struct {
	// Name identifies the rule in refusals, audit records and metrics:
	// unique, [a-z0-9][a-z0-9-]*, at most 63 characters.
	Name string
	// When is the CEL expression, of type bool, that says whether the rule
	// matches (see package doc and Compile for what it sees).
	When string
	// Effect is what a match does.
	Effect Effect
	// Message tells the caller why; "" means the name.
	Message string
	// Approvers are, for an Ask rule, the ids of the approvers who alone
	// may decide the calls it matches; none means the caller's own
	// approvers. Only Ask rules may name approvers.
	Approvers []string
	// Mode is Enforce ("" too) or Audit.
	Mode Mode
}

// message is the rule's message, its name when it has none.
func (r *Rule) message() string {
	if r.Message == "" {
		return r.Name
	}
	return r.Message
}

// maxNameLen bounds a rule's name, which becomes a metric label.
const maxNameLen = 63

// validName reports whether s is a rule name: [a-z0-9][a-z0-9-]*.
func validName(s string) bool {
	if s == "" || len(s) > maxNameLen || s[0] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return false
		}
	}
	return true
}
