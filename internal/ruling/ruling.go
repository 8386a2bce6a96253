// Package ruling is the gateway's side of the organization's rules
// (package rules): what a call looks like to them, what their decisions
// look like to callers and auditors, and their metrics and logs.
package ruling

import (
	"encoding/json"
	"sync"

	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/rules"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// Input is a call's canonical input for version v as rules read it: a
// JSON object decoded, numbers as float64 (CEL's double), with the
// defaults of v's input schema where it leaves them out. Input that is not
// an object (which no tool's schema takes) reads as an empty map.
func (t *Tools) Input(v *registry.Version, canonical []byte) map[string]any {
	var m map[string]any
	if err := json.Unmarshal(canonical, &m); err != nil || m == nil {
		m = map[string]any{}
	}
	t.defaultsOf(v).fill(m)
	return m
}

// defaultsOf are the defaults of v's input schema, read once per version.
func (t *Tools) defaultsOf(v *registry.Version) defaults {
	if got, ok := t.defaults.Load(v); ok {
		return got.(defaults)
	}
	ds := defaultsOf(v.Tool.InputSchema)
	t.defaults.Store(v, ds)
	return ds
}

// Principal is the caller as rules see it.
func Principal(id string, claims map[string]any, budgets []string, mode toolgatetype.ApprovalMode) *rules.Principal {
	if claims == nil {
		claims = noClaims
	}
	if budgets == nil {
		budgets = noBudgets
	}
	return &rules.Principal{ID: id, Groups: rules.Groups(claims), Claims: claims, Budgets: budgets, ApprovalMode: string(mode)}
}

// noClaims and noBudgets are those of a caller with none, shared: rules
// only read them.
var (
	noClaims  = map[string]any{}
	noBudgets = []string{}
)

// Tools keeps each tool version as rules see it, built once: a version
// is immutable, and a call's rules read it for every rule.
type Tools struct {
	m        sync.Map // *registry.Version -> *rules.Tool
	applying sync.Map // applyKey -> *forTool
	defaults sync.Map // *registry.Version -> defaults
}

// Of is version v as rules see it, risk its risk level.
func (t *Tools) Of(v *registry.Version, risk toolgatetype.RiskLevel) *rules.Tool {
	if got, ok := t.m.Load(v); ok {
		return got.(*rules.Tool)
	}
	rt := rules.ToolOf(v, risk)
	t.m.Store(v, rt)
	return rt
}

// PolicyRules are the matches as a quote's policy.rules shows them.
func PolicyRules(ms []rules.Match) []toolgatetype.PolicyRule {
	if len(ms) == 0 {
		return nil
	}
	out := make([]toolgatetype.PolicyRule, len(ms))
	for i, m := range ms {
		out[i] = toolgatetype.PolicyRule{Name: m.Name, Effect: string(m.Effect), Message: m.Message, Pending: m.Pending}
	}
	return out
}

// Uses are the matches as the audit record names them.
func Uses(ms []rules.Match) []toolgatetype.RuleUse {
	if len(ms) == 0 {
		return nil
	}
	out := make([]toolgatetype.RuleUse, len(ms))
	for i, m := range ms {
		out[i] = toolgatetype.RuleUse{Name: m.Name, Effect: string(m.Effect), Mode: string(m.Mode)}
	}
	return out
}

// StoreUses are the matches as the store keeps them with the execution.
func StoreUses(ms []rules.Match) []storage.RuleUse {
	if len(ms) == 0 {
		return nil
	}
	out := make([]storage.RuleUse, len(ms))
	for i, m := range ms {
		out[i] = storage.RuleUse{Name: m.Name, Effect: string(m.Effect), Mode: string(m.Mode)}
	}
	return out
}

// FromStore are the rules the store kept with an execution, as the audit
// trail shows them.
func FromStore(us []storage.RuleUse) []toolgatetype.RuleUse {
	if len(us) == 0 {
		return nil
	}
	out := make([]toolgatetype.RuleUse, len(us))
	for i, u := range us {
		out[i] = toolgatetype.RuleUse{Name: u.Name, Effect: u.Effect, Mode: u.Mode}
	}
	return out
}

// Denied is the refusal of a call the rule m denies.
func Denied(m *rules.Match) *toolgatetype.Error {
	return &toolgatetype.Error{
		Code:    toolgatetype.CodeRuleDenied,
		Message: Reason(m),
		Rule:    &toolgatetype.RuleRef{Name: m.Name, Message: m.Message},
	}
}

// Reason is why the rule m stops a call, as policy.reasons and a
// refusal's message say it.
func Reason(m *rules.Match) string {
	return "Rule " + m.Name + ": " + m.Message
}

// applyKey is a tool version under a set of rules.
type applyKey struct {
	set *rules.Set
	v   *registry.Version
}

// forTool is a set of rules as it applies to one tool version: the rules
// that may decide a call of it, and those rules as its docs name them.
type forTool struct {
	set  *rules.Set
	docs []toolgatetype.ToolRule
	cost rules.Cost
}

// of is set as it applies to version v, called at cost (which the
// version's price and the gateway's fee fix), found once per set and
// version: a partial evaluation of each rule is too much for every call.
func (t *Tools) of(set *rules.Set, v *registry.Version, risk toolgatetype.RiskLevel, cost func() rules.Cost) *forTool {
	k := applyKey{set, v}
	if got, ok := t.applying.Load(k); ok {
		return got.(*forTool)
	}
	f := &forTool{cost: cost()}
	f.set = set.ForCall(t.Of(v, risk), f.cost)
	for _, r := range f.set.Rules() {
		msg := r.Message
		if msg == "" {
			msg = r.Name
		}
		f.docs = append(f.docs, toolgatetype.ToolRule{Name: r.Name, Effect: string(r.Effect), Mode: string(r.Mode), Message: msg})
	}
	t.applying.Store(k, f)
	return f
}

// Narrow is the rules of set that may decide a call of version v (see
// rules.Set.ForCall), on which a call of v is decided alone, and what the
// call costs as they read it; cost computes that, once per version.
func (t *Tools) Narrow(set *rules.Set, v *registry.Version, risk toolgatetype.RiskLevel, cost func() rules.Cost) (*rules.Set, rules.Cost) {
	if set.Len() == 0 {
		return set, rules.Cost{}
	}
	f := t.of(set, v, risk, cost)
	return f.set, f.cost
}

// Applying are the rules of set that may decide a call of version v, as
// its docs name them.
func (t *Tools) Applying(set *rules.Set, v *registry.Version, risk toolgatetype.RiskLevel, cost func() rules.Cost) []toolgatetype.ToolRule {
	if set.Len() == 0 {
		return nil
	}
	return t.of(set, v, risk, cost).docs
}
