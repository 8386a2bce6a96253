package storage

// RuleUse is a rule of the organization's that matched a call (contract
// section 29), as the call's audit trail shows it: its Name, its Effect
// ("deny", "ask" or "hide") and its Mode ("enforce" or "audit"). A rule in
// audit mode changed nothing, and is kept all the same, so that a team can
// watch what a rule would do before it bites.
type RuleUse struct {
	Name   string
	Effect string
	Mode   string
}
