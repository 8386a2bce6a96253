package rules

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"cel.dev/cel-go/cel"
	celast "cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/cost"
	"cel.dev/cel-go/ext"
)

// CostLimit bounds a rule's cost, in CEL's cost units, both as estimated
// when it is compiled and as spent when it runs: a rule whose estimate
// passes it is refused at load, and one that would spend more at run
// time stops there (and, failing, matches). A comparison costs about 1;
// one pass over a list of sizeLimit elements about sizeLimit.
const CostLimit = 1_000_000

// sizeLimit is the size the cost estimate assumes for every list, map and
// string a rule reads from the call (groups, claims, tags, the input), so
// that a rule stays affordable at the sizes a call brings.
const sizeLimit = 1_000

// Error is a rule that cannot work, found by Compile.
type Error struct {
	// Index is the rule's place in the list, Name its name ("" when that
	// is what is wrong).
	Index int
	Name  string
	// Field is the field at fault: "name", "when", "effect", "mode",
	// "approvers".
	Field string
	// Line and Column place the fault in When (1-based); 0 when it is not
	// about a place in it.
	Line, Column int
	Msg          string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("rule ")
	if e.Name != "" {
		b.WriteString(e.Name)
	} else {
		fmt.Fprintf(&b, "#%d", e.Index+1)
	}
	b.WriteString(": ")
	b.WriteString(e.Field)
	if e.Column > 0 {
		if e.Line > 1 {
			fmt.Fprintf(&b, ": line %d", e.Line)
		}
		fmt.Fprintf(&b, ": column %d", e.Column)
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	return b.String()
}

// Variables are the names a rule may read, as declared to CEL.
var Variables = []string{"principal", "tool", "input", "call", "now"}

// hideVariables are those a hide rule may read: what is known before
// the call is, so that a tool is hidden the same way in a listing as in a
// call.
var hideVariables = []string{"principal", "tool"}

// envs are the CEL environments rules compile in: every variable, and a
// hide rule's two. Built once: making one is far costlier than a rule.
type envs struct{ all, hide *cel.Env }

func newEnvs() (envs, error) {
	all, err := newEnv(Variables)
	if err != nil {
		return envs{}, err
	}
	hide, err := newEnv(hideVariables)
	return envs{all: all, hide: hide}, err
}

// newEnv declares names of the variables to CEL, with their types, CEL's
// standard library and its string extensions: nothing a rule can call
// reaches outside the process.
func newEnv(names []string) (*cel.Env, error) {
	decl := map[string]cel.EnvOption{
		"principal": cel.Variable("principal", cel.ObjectType("rules.Principal")),
		"tool":      cel.Variable("tool", cel.ObjectType("rules.Tool")),
		"input":     cel.Variable("input", cel.MapType(cel.StringType, cel.DynType)),
		"call":      cel.Variable("call", cel.ObjectType("rules.Cost")),
		"now":       cel.Variable("now", cel.TimestampType),
	}
	opts := []cel.EnvOption{
		ext.NativeTypes(reflect.TypeFor[Principal](), reflect.TypeFor[Tool](), reflect.TypeFor[Cost](), ext.ParseStructTags(true)),
		ext.Strings(),
	}
	for _, n := range names {
		opts = append(opts, decl[n])
	}
	return cel.NewEnv(opts...)
}

// Compile checks rules and compiles each once. The first rule that
// cannot work is returned as an *Error.
func Compile(rules []Rule) (*Set, error) {
	s := &Set{}
	if len(rules) == 0 {
		return s, nil
	}
	e, err := newEnvs()
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for i, r := range rules {
		c, err := compileRule(e, i, r)
		if err != nil {
			return nil, err
		}
		if seen[r.Name] {
			return nil, &Error{Index: i, Name: r.Name, Field: "name", Msg: "another rule has this name: names must be unique"}
		}
		seen[r.Name] = true
		s.rules = append(s.rules, c)
		s.readsInput = s.readsInput || c.readsInput
		s.hides = s.hides || c.Effect == Hide
	}
	return s, nil
}

// compileRule checks and compiles rule i.
func compileRule(e envs, i int, r Rule) (*compiled, error) {
	fail := func(field, format string, args ...any) error {
		return &Error{Index: i, Name: r.Name, Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	if !validName(r.Name) {
		name := r.Name
		r.Name = "" // not quoted back as a name: it is not one
		return nil, fail("name", "%q is not a rule name: lower-case letters, digits and '-', starting with a letter or digit, at most %d characters", name, maxNameLen)
	}
	switch r.Effect {
	case Deny, Ask, Hide:
	default:
		return nil, fail("effect", "%q is not an effect: use \"deny\", \"ask\" or \"hide\"", r.Effect)
	}
	switch r.Mode {
	case "":
		r.Mode = Enforce
	case Enforce, Audit:
	default:
		return nil, fail("mode", "%q is not a mode: use \"enforce\" or \"audit\"", r.Mode)
	}
	if len(r.Approvers) > 0 && r.Effect != Ask {
		return nil, fail("approvers", "only an ask rule names approvers")
	}
	r.Approvers = slices.Clone(r.Approvers)
	if strings.TrimSpace(r.When) == "" {
		return nil, fail("when", "is required: the CEL expression that says when the rule matches")
	}
	env := e.all
	if r.Effect == Hide {
		env = e.hide
	}
	ast, iss := env.Compile(r.When)
	if iss.Err() != nil {
		return nil, celError(i, r, iss)
	}
	if !ast.OutputType().IsExactType(cel.BoolType) {
		return nil, &Error{Index: i, Name: r.Name, Field: "when", Line: 1, Column: 1,
			Msg: fmt.Sprintf("the expression is of type %s: a rule's when must be a bool", ast.OutputType())}
	}
	est, err := env.EstimateCost(ast, sizes{})
	if err != nil {
		return nil, fail("when", "its cost cannot be estimated: %v", err)
	}
	if est.Max > CostLimit {
		// The cost is the whole expression's: placed at its start, so that
		// the refusal names a column as every other fault in When does.
		return nil, &Error{Index: i, Name: r.Name, Field: "when", Line: 1, Column: 1,
			Msg: fmt.Sprintf("its estimated cost, up to %s, passes the limit of %d (each list, map or string it reads counted at %d elements): loop over less, or nest fewer loops",
				costText(est.Max), CostLimit, sizeLimit)}
	}
	c := &compiled{Rule: r, index: i, readsInput: readsVariable(ast, "input"), readsNow: readsVariable(ast, "now")}
	// A rule without a loop does work in proportion to what it reads,
	// which a request's size bounds, and is estimated within the limit
	// whatever it reads: counting its cost as it runs would only slow
	// every call. A rule that loops can multiply that, so it is bounded.
	var bound []cel.ProgramOption
	if loops(ast) {
		bound = append(bound, cel.CostLimit(CostLimit))
	}
	if c.prog, err = env.Program(ast, append(bound, cel.EvalOptions(cel.OptOptimize))...); err != nil {
		return nil, fail("when", "%v", err)
	}
	if c.partial, err = env.Program(ast, append(bound, cel.EvalOptions(cel.OptPartialEval))...); err != nil {
		return nil, fail("when", "%v", err)
	}
	return c, nil
}

// celError turns CEL's first issue into an Error placing it in When. A
// hide rule reading what only a call knows is told why it may not.
func celError(i int, r Rule, iss *cel.Issues) error {
	first := iss.Errors()[0]
	msg := first.Message
	if r.Effect == Hide {
		for _, v := range Variables {
			if !slices.Contains(hideVariables, v) && strings.Contains(msg, "undeclared reference to '"+v+"'") {
				msg = fmt.Sprintf("a hide rule may read principal and tool only, not %s: a tool is hidden before any call of it is known", v)
			}
		}
	}
	loc := first.Location
	return &Error{Index: i, Name: r.Name, Field: "when", Line: loc.Line(), Column: loc.Column() + 1, Msg: msg}
}

// costText writes an estimate, which is often beyond any useful number.
func costText(n uint64) string {
	if n >= 1<<62 {
		return "unbounded"
	}
	return fmt.Sprint(n)
}

// readsVariable reports whether the checked expression reads the variable.
func readsVariable(ast *cel.Ast, name string) bool {
	for _, ref := range ast.NativeRep().ReferenceMap() {
		if ref.Name == name {
			return true
		}
	}
	return false
}

// loops reports whether the expression has a comprehension (all,
// exists, map, filter...), the one way a rule's work grows faster than
// what it reads.
func loops(ast *cel.Ast) bool {
	return len(celast.MatchDescendants(celast.NavigateAST(ast.NativeRep()), celast.KindMatcher(celast.ComprehensionKind))) > 0
}

// sizes tells the cost estimate the size of what a rule reads from the
// call: sizeLimit for every list, map and string.
type sizes struct{}

func (sizes) EstimateSize(n cost.AstNode) *cost.SizeEstimate {
	if len(n.Path()) == 0 {
		return nil
	}
	e := cost.RangedSizeEstimate(0, sizeLimit)
	return &e
}

func (sizes) EstimateCallCost(string, string, *cost.AstNode, []cost.AstNode) *cost.CallEstimate {
	return nil
}
