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
	prog, partial cel.Program
	readsInput    bool
}

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
	if set == nil || len(set.rules) == 0 {
		return Decision{}
	}
	a := &activation{s: s}
	var d Decision
	for _, c := range set.rules {
		if c.Effect == Hide {
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
	if set == nil {
		return nil
	}
	a := &activation{s: &Subject{Tool: t}}
	var out []Rule
	for _, c := range set.rules {
		v, err := evalPartial(c.partial, a, allButTool)
		if b, ok := v.(types.Bool); err == nil && ok && !bool(b) {
			continue
		}
		out = append(out, c.Rule)
	}
	return out
}

// match turns a rule's result into a Match, and whether it is one.
func (c *compiled) match(out any, err error) (Match, bool) {
	m := Match{Name: c.Name, Effect: c.Effect, Mode: c.Mode, Message: c.message(), Approvers: c.Approvers}
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
