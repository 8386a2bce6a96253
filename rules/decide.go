package rules

import (
	"errors"
	"slices"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/interpreter"
)

// Set is a list of compiled rules. The zero Set and a nil *Set have no
// rules and decide nothing, at no cost.
type Set struct {
	rules []*compiled
	// readsInput: some rule reads the input, which a caller decodes for
	// Decide only then; hides: some rule is a hide rule.
	readsInput, hides bool
}

// compiled is a rule compiled: prog evaluates it on a whole subject,
// partial on one whose input, or all but the tool, is unknown.
type compiled struct {
	Rule
	index         int // in the rules as given
	prog, partial cel.Program
	// readsInput and readsNow: the rule reads the input, the time. One
	// that reads neither decides every call of a tool by one caller
	// alike (see Static).
	readsInput, readsNow bool
}

// static reports whether c is decided by who calls alone, for a tool at
// its cost: a deny or ask rule reading neither the input nor the time.
func (c *compiled) static() bool { return c.Effect != Hide && !c.readsInput && !c.readsNow }

// Len is the number of rules.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.rules)
}

// ReadsInput reports whether some deny or ask rule reads the input, so
// that a caller decodes it for Decide only when one does.
func (s *Set) ReadsInput() bool { return s != nil && s.readsInput }

// Hides reports whether some rule is a hide rule.
func (s *Set) Hides() bool { return s != nil && s.hides }

// Rules are the rules as given, modes defaulted.
func (s *Set) Rules() []Rule {
	if s == nil {
		return nil
	}
	out := make([]Rule, len(s.rules))
	for i, c := range s.rules {
		out[i] = c.Rule
	}
	return out
}

// Match is a rule that matched, or might: Pending when it depends on an
// input not known yet, Err when evaluating it failed (which counts as a
// match).
type Match struct {
	index     int // the rule's, to keep the rules' order
	Name      string
	Effect    Effect
	Mode      Mode
	Message   string
	Approvers []string
	Pending   bool
	Err       error
}

// Enforced reports whether the match acts: its rule enforces and it is
// not pending.
func (m *Match) Enforced() bool { return m.Mode == Enforce && !m.Pending }

// Decision is what the deny and ask rules decided about one call: every
// rule that matched, in the rules' order. The zero Decision allows.
type Decision struct {
	Matches []Match
}

// Denied is the first enforced deny that matched; nil when none. Deny
// outranks ask.
func (d *Decision) Denied() *Match {
	for i := range d.Matches {
		if m := &d.Matches[i]; m.Effect == Deny && m.Enforced() {
			return m
		}
	}
	return nil
}

// Asked reports whether an enforced ask matched and who may decide the
// call: the approvers the matching ask rules name, together; none when
// no rule names any, which leaves it to the caller's own approvers.
func (d *Decision) Asked() (asked bool, approvers []string) {
	for i := range d.Matches {
		m := &d.Matches[i]
		if m.Effect != Ask || !m.Enforced() {
			continue
		}
		asked = true
		for _, a := range m.Approvers {
			if !slices.Contains(approvers, a) {
				approvers = append(approvers, a)
			}
		}
	}
	return asked, approvers
}

// Decide evaluates the deny and ask rules on s. With s.InputKnown false,
// a rule that depends on the input is Pending, unless it matches or not
// whatever the input is.
func (set *Set) Decide(s *Subject) Decision {
	return set.DecideWith(s, nil)
}

// Static is what the rules that read neither the input nor the time (see
// HasStatic) decided for one caller of one tool: the same for every call
// of that tool by a caller of the same id, claims, budgets and approval
// mode, so a gateway may keep it and decide only the other rules per
// call. It is only read once made.
type Static struct {
	set     *Set
	matches []Match
}

// HasStatic reports whether some deny or ask rule of set is decided by
// who calls alone.
func (set *Set) HasStatic() bool {
	if set == nil {
		return false
	}
	for _, c := range set.rules {
		if c.static() {
			return true
		}
	}
	return false
}

// DecideStatic decides the rules of set that read neither the input nor
// the time, on s.
func (set *Set) DecideStatic(s *Subject) *Static {
	st := &Static{set: set}
	a := &activation{s: s}
	for _, c := range set.rules {
		if c.static() {
			if m, ok := c.match(eval(c.prog, a)); ok {
				st.matches = append(st.matches, m)
			}
		}
	}
	return st
}

// DecideWith is Decide taking the rules that read neither the input nor
// the time from st, a DecideStatic of the same set for the same caller;
// nil decides them too.
func (set *Set) DecideWith(s *Subject, st *Static) Decision {
	if set == nil || len(set.rules) == 0 {
		return Decision{}
	}
	if st != nil && st.set != set {
		st = nil // another set's: decided here instead
	}
	a := &activation{s: s}
	var d Decision
	next := 0 // st's next match
	for _, c := range set.rules {
		if c.Effect == Hide {
			continue
		}
		if st != nil && c.static() {
			if next < len(st.matches) && st.matches[next].index == c.index {
				d.Matches = append(d.Matches, st.matches[next])
				next++
			}
			continue
		}
		var out any
		var err error
		if c.readsInput && !s.InputKnown {
			out, err = evalPartial(c.partial, a, inputUnknown)
		} else {
			out, err = eval(c.prog, a)
		}
		if m, ok := c.match(out, err); ok {
			d.Matches = append(d.Matches, m)
		}
	}
	return d
}

// Hidden evaluates the hide rules for principal p and tool t: whether an
// enforced one hides the tool, and every one that matched (audit ones
// included) for the caller to count.
func (set *Set) Hidden(p *Principal, t *Tool) (hidden bool, matches []Match) {
	if !set.Hides() {
		return false, nil
	}
	a := &activation{s: &Subject{Principal: p, Tool: t}}
	for _, c := range set.rules {
		if c.Effect != Hide {
			continue
		}
		out, err := eval(c.prog, a)
		if m, ok := c.match(out, err); ok {
			matches = append(matches, m)
			hidden = hidden || m.Mode == Enforce
		}
	}
	return hidden, matches
}

// AppliesTo returns the rules that may match some call of tool t,
// whoever calls it with whatever input: those that do not come out false
// with only the tool known. Docs name them.
func (set *Set) AppliesTo(t *Tool) []Rule {
	return set.For(t).Rules()
}

// For is the set of the rules that may match some call of tool t (see
// AppliesTo), which decides every call of t as set does: a rule false
// whatever the caller, input, cost and time are stays false on any of
// them, an error in what it does not know included (false && anything is
// false in CEL). Most rules name their tools, so a gateway decides each
// call on this smaller set, made once per tool version.
func (set *Set) For(t *Tool) *Set {
	return set.narrow(&Subject{Tool: t}, allButTool)
}

// ForCall is For of tool t called at cost, which a tool's price and the
// gateway's fee fix for all its calls: rules on the cost alone are then
// decided too.
func (set *Set) ForCall(t *Tool, cost Cost) *Set {
	return set.narrow(&Subject{Tool: t, Cost: cost}, allButToolAndCost)
}

// narrow is the set of the rules of set that do not come out false on s
// with the unknown attributes unknown.
func (set *Set) narrow(s *Subject, unknown []*cel.AttributePatternType) *Set {
	if set == nil {
		return nil
	}
	a := &activation{s: s}
	out := &Set{}
	for _, c := range set.rules {
		v, err := evalPartial(c.partial, a, unknown)
		if b, ok := v.(types.Bool); err == nil && ok && !bool(b) {
			continue
		}
		out.rules = append(out.rules, c)
		out.readsInput = out.readsInput || (c.readsInput && c.Effect != Hide)
		out.hides = out.hides || c.Effect == Hide
	}
	return out
}

// match turns a rule's result into a Match, and whether it is one.
func (c *compiled) match(out any, err error) (Match, bool) {
	m := Match{index: c.index, Name: c.Name, Effect: c.Effect, Mode: c.Mode, Message: c.message(), Approvers: c.Approvers}
	switch v := out.(type) {
	case nil:
		m.Err = err
		return m, true
	case types.Bool:
		return m, bool(v)
	case *types.Unknown:
		m.Pending = true
		return m, true
	}
	// A program that type-checked as bool gives one, an unknown or an
	// error; anything else fails closed like an error.
	m.Err = errNotBool
	return m, true
}

// errNotBool is a rule's result that is not a bool, which Compile rules
// out.
var errNotBool = errors.New("the rule's result is not a bool")

func eval(p cel.Program, a *activation) (any, error) {
	out, _, err := p.Eval(a)
	if err != nil {
		return nil, err
	}
	if types.IsError(out) {
		return nil, out.(*types.Err)
	}
	return out, nil
}

// The unknowns of a partial evaluation: the input, for a quote; all but
// the tool, for the docs.
var (
	inputUnknown = []*cel.AttributePatternType{cel.AttributePattern("input")}
	allButTool   = []*cel.AttributePatternType{
		cel.AttributePattern("principal"), cel.AttributePattern("input"),
		cel.AttributePattern("call"), cel.AttributePattern("now"),
	}
	allButToolAndCost = []*cel.AttributePatternType{
		cel.AttributePattern("principal"), cel.AttributePattern("input"), cel.AttributePattern("now"),
	}
)

func evalPartial(p cel.Program, a *activation, unknown []*cel.AttributePatternType) (any, error) {
	vars, err := cel.PartialVars(a, unknown...)
	if err != nil {
		return nil, err
	}
	out, _, err := p.Eval(vars)
	if err != nil {
		return nil, err
	}
	if types.IsError(out) {
		return nil, out.(*types.Err)
	}
	return out, nil
}

// activation gives CEL the subject's variables, without building a map
// of them for each call.
type activation struct{ s *Subject }

func (a *activation) ResolveName(name string) (any, bool) {
	s := a.s
	switch name {
	case "principal":
		return s.Principal, s.Principal != nil
	case "tool":
		return s.Tool, s.Tool != nil
	case "input":
		if !s.InputKnown {
			return nil, false
		}
		if s.Input == nil {
			return map[string]any{}, true
		}
		return s.Input, true
	case "call":
		return &s.Cost, true
	case "now":
		return types.Timestamp{Time: s.Now.UTC()}, true
	}
	return nil, false
}

func (a *activation) Parent() interpreter.Activation { return nil }
