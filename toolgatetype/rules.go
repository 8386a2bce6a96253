package toolgatetype

import "encoding/json"

// The organization's rules (package rules) as callers and auditors see
// them.

// RuleRef names the rule that denied a call, with its message: the
// error.rule of rule_denied.
type RuleRef struct {
	Name    string `json:"name"`
	Message string `json:"message"`
}

// PolicyRule is a rule that matches a quoted call (policy.rules), or will
// decide it once its input is known (Pending).
type PolicyRule struct {
	Name    string `json:"name"`
	Effect  string `json:"effect"`
	Message string `json:"message"`
	Pending bool   `json:"pending"`
}

// RuleUse is a rule that took part in a decision, for the audit trail:
// its effect ("deny", "ask", "hide") and mode ("enforce", "audit").
type RuleUse struct {
	Name   string `json:"name"`
	Effect string `json:"effect"`
	Mode   string `json:"mode"`
}

// QuoteOptions are the optional parts of a quote.
type QuoteOptions struct {
	// Input, when set, is the input the call will carry: the
	// organization's rules that read it are decided in the quote instead
	// of shown pending. The call is still decided on its own input.
	Input json.RawMessage
}

// ToolRule is a rule that may decide a call of a tool, as its docs name
// it: its effect ("deny", "ask", "hide") and mode ("enforce", "audit").
type ToolRule struct {
	Name    string `json:"name"`
	Effect  string `json:"effect"`
	Mode    string `json:"mode"`
	Message string `json:"message"`
}
