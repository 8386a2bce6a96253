package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/budgets"
	"github.com/toolgate/toolgate/internal/pricing"
	"github.com/toolgate/toolgate/internal/ruling"
	"github.com/toolgate/toolgate/internal/strictjson"
	"github.com/toolgate/toolgate/internal/suggest"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/rules"
	"github.com/toolgate/toolgate/toolgatetype"
)

// The outcomes of a rule case, as its "expect" names them.
const (
	outcomeAllow = "allow"
	outcomeDeny  = string(rules.Deny)
	outcomeAsk   = string(rules.Ask)
	outcomeHide  = string(rules.Hide)
)

// RuleCaseError is a mistake in a file of rule cases, with the path of
// the field it is about ("[3].tool"; empty for the file as a whole).
type RuleCaseError struct {
	Path string
	Msg  string
}

func (e *RuleCaseError) Error() string {
	if e.Path == "" {
		return e.Msg
	}
	return e.Path + ": " + e.Msg
}

// ruleCaseJSON is one case of a rules test file.
type ruleCaseJSON struct {
	Principal *struct {
		ID     *text          `json:"id"`
		Groups []str          `json:"groups"`
		Claims map[string]any `json:"claims"`
	} `json:"principal"`
	Tool   *string         `json:"tool"`
	Input  json.RawMessage `json:"input"`
	Expect *string         `json:"expect"`
	// Now is the time the case is decided at (RFC 3339), for rules that
	// read the time; none is the time of the run.
	Now *string `json:"now"`
}

// ruleCase is a case checked: what the rules are asked, and what they
// should answer ("" when the case does not say).
type ruleCase struct {
	tool    string
	subject *rules.Subject // nil: the tool is an MCP server's, not known until it runs
	expect  string
}

// RunRuleCases decides each case of cases, a JSON array of
// {"principal": {"id", "groups", "claims"}, "tool", "input", "now", "expect"},
// against cfg's rules as the gateway would decide the call (contract
// section 29), and writes one line per case to out, then a summary as
// opa test does: "PASS: n/m", or "FAIL: k/m" with k the cases whose
// expectation failed. passed is false when one did. A mistake in cases
// is a *RuleCaseError naming the case and field, found before anything
// is written.
//
// The principal counts in the budgets cfg puts it in (by members, its
// claims, everyone; ancestors included) and has its approval mode from
// cfg; the call costs the tool's price and cfg's fee; now is the time of
// the run. The tools of cfg's MCP servers are known only once the servers
// run, so a case naming one is skipped, and said so.
func RunRuleCases(cfg *Config, cases []byte, out io.Writer) (passed bool, err error) {
	set, err := rules.Compile(cfg.Rules)
	if err != nil {
		return false, ruleError("rules", err)
	}
	reg := cfg.Registry
	if reg == nil {
		if reg, err = cfg.registry(); err != nil {
			return false, err
		}
	}
	var tree *budgets.Tree
	if len(cfg.Budgets) > 0 {
		if tree, err = budgets.New(cfg.Budgets); err != nil {
			return false, err
		}
	}
	checked, err := checkRuleCases(cfg, reg, tree, cases)
	if err != nil {
		return false, err
	}
	var expected, failed, skipped int
	for i, c := range checked {
		fmt.Fprintf(out, "[%d] %s", i, c.tool)
		if c.subject == nil {
			fmt.Fprintf(out, ": skipped: the tools of MCP servers are known only once the servers run (toolgate serve)\n")
			skipped++
			continue
		}
		outcome, matches := decideCase(set, c.subject)
		fmt.Fprintf(out, " by %s: %s", c.subject.Principal.ID, outcome)
		if len(matches) > 0 {
			fmt.Fprintf(out, "; rules: %s", matchList(matches))
		}
		if c.expect != "" {
			expected++
			if verdict, _, _ := strings.Cut(outcome, " "); verdict == c.expect {
				fmt.Fprint(out, "; PASS")
			} else {
				failed++
				fmt.Fprintf(out, "; FAIL: expected %s", c.expect)
			}
		}
		fmt.Fprintln(out)
	}
	summary := fmt.Sprintf("PASS: %d/%d", expected, expected)
	if failed > 0 {
		summary = fmt.Sprintf("FAIL: %d/%d", failed, expected)
	}
	if skipped > 0 {
		summary += fmt.Sprintf(" (%d skipped)", skipped)
	}
	fmt.Fprintln(out, summary)
	return failed == 0, nil
}

// decideCase decides s as the gateway decides a call: a hidden tool is
// not there at all; then an enforced deny outranks an enforced ask; audit
// rules change nothing and are listed all the same. A rule that fails
// while running has matched (Match.Err), which fails closed. The outcome
// is "allow", "deny", "hide", or "ask" with the approvers rules name.
func decideCase(set *rules.Set, s *rules.Subject) (outcome string, matches []rules.Match) {
	hidden, matches := set.Hidden(s.Principal, s.Tool)
	if hidden {
		return outcomeHide, matches
	}
	d := set.Decide(s)
	matches = append(matches, d.Matches...)
	if d.Denied() != nil {
		return outcomeDeny, matches
	}
	if asked, approvers := d.Asked(); asked {
		if len(approvers) == 0 {
			return outcomeAsk + " (the principal's approvers)", matches
		}
		return outcomeAsk + " (approvers: " + strings.Join(approvers, ", ") + ")", matches
	}
	return outcomeAllow, matches
}

// matchList names the rules that matched: "name", "name (audit)", and a
// rule that failed with why.
func matchList(ms []rules.Match) string {
	names := make([]string, len(ms))
	for i, m := range ms {
		var notes []string
		if m.Mode == rules.Audit {
			notes = append(notes, "audit")
		}
		if m.Err != nil {
			notes = append(notes, "failed: "+m.Err.Error())
		}
		names[i] = m.Name
		if len(notes) > 0 {
			names[i] += " (" + strings.Join(notes, ", ") + ")"
		}
	}
	return strings.Join(names, ", ")
}

// checkRuleCases decodes and checks every case, making each its subject.
func checkRuleCases(cfg *Config, reg *registry.Registry, tree *budgets.Tree, data []byte) ([]ruleCase, error) {
	var ruleTools ruling.Tools // the tools and inputs as the gateway's rules see them
	raw, err := parseDocument(data)
	if err == nil && kindOf(raw) != "an array" {
		err = errorf("", "must be an array of cases, not %s", kindOf(raw))
	}
	var in []ruleCaseJSON
	if err == nil {
		err = configErrorOf(strictjson.Decode(raw, &in))
	}
	if err != nil {
		var ce *ConfigError
		if errors.As(err, &ce) {
			return nil, &RuleCaseError{Path: ce.Path, Msg: ce.Msg}
		}
		return nil, err
	}
	rate := pricing.DefaultFeeRate
	if cfg.FeeRate != nil {
		rate = *cfg.FeeRate
	}
	now := time.Now()
	out := make([]ruleCase, len(in))
	for i, c := range in {
		fail := func(field, format string, args ...any) error {
			return &RuleCaseError{Path: at(fmt.Sprintf("[%d]", i), field), Msg: fmt.Sprintf(format, args...)}
		}
		if c.Expect != nil {
			switch e := *c.Expect; e {
			case outcomeAllow, outcomeDeny, outcomeAsk, outcomeHide:
				out[i].expect = e
			default:
				return nil, fail("expect", `%q is not an outcome: use "allow", "deny", "ask" or "hide"`, e)
			}
		}
		if c.Principal == nil || c.Principal.ID == nil || *c.Principal.ID == "" {
			return nil, fail("principal.id", "is required: the id of the caller")
		}
		if c.Tool == nil || *c.Tool == "" {
			return nil, fail("tool", "is required: the slug of the tool called")
		}
		out[i].tool = *c.Tool
		v, err := reg.Lookup(*c.Tool)
		if err != nil {
			if _, mcp := cfg.mcpServerOf(*c.Tool); mcp {
				continue
			}
			return nil, fail("tool", "no tool %q is registered%s", *c.Tool, suggest.DidYouMean(*c.Tool, slugs(reg)))
		}
		raw := json.RawMessage("{}")
		if c.Input != nil {
			if k := kindOf(c.Input); k != "an object" {
				return nil, fail("input", "must be an object, not %s", k)
			}
			if fails := v.Input.Validate(c.Input, "input"); len(fails) > 0 {
				return nil, fail("input", "does not match the tool's input schema: %s: %s", fails[0].Path, fails[0].Message)
			}
			raw = c.Input
		}
		// As the gateway reads it: the schema's defaults filled in.
		input := ruleTools.Input(v, raw)
		at := now
		if c.Now != nil {
			t, err := time.Parse(time.RFC3339, *c.Now)
			if err != nil {
				return nil, fail("now", "must be a time in RFC 3339, such as 2026-12-06T23:30:00+01:00")
			}
			at = t
		}
		p := casePrincipal(cfg, tree, string(*c.Principal.ID), strs(c.Principal.Groups), c.Principal.Claims)
		amt := pricing.WithFee(v.Tool.Pricing.Amount, rate)
		out[i].subject = &rules.Subject{
			Principal:  p,
			Tool:       ruleTools.Of(v, toolgate.RiskOf(v.Capabilities)),
			Input:      input,
			InputKnown: true,
			Cost:       rules.Cost{PriceUSD: amt.Price.InexactFloat64(), FeeUSD: amt.Fee.InexactFloat64(), TotalUSD: amt.Total.InexactFloat64()},
			Now:        at,
		}
	}
	return out, nil
}

// casePrincipal is the caller of a case as a rule sees it. Its groups,
// when the case gives none, are its claims' "groups", as a token's are;
// its budgets those its id and claims put it in, ancestors included; its
// approval mode its entry's in cfg, else "caller".
func casePrincipal(cfg *Config, tree *budgets.Tree, id string, groups []string, claims map[string]any) *rules.Principal {
	if claims == nil {
		claims = map[string]any{}
	}
	byName := map[string][]string{}
	for name, v := range claims {
		byName[name] = claimStrings(v)
	}
	if groups == nil {
		groups = byName["groups"]
	}
	if groups == nil {
		groups = []string{}
	}
	if _, ok := claims["groups"]; !ok && len(groups) > 0 {
		byName["groups"] = groups
	}
	p := &rules.Principal{ID: id, Groups: groups, Claims: claims, Budgets: []string{}, ApprovalMode: string(toolgatetype.ApprovalModeCaller)}
	if tree != nil {
		for _, n := range tree.For(id, byName) {
			p.Budgets = append(p.Budgets, n.ID)
		}
	}
	for _, pr := range cfg.Principals {
		if pr.ID == id && pr.ApprovalMode != "" {
			p.ApprovalMode = string(pr.ApprovalMode)
		}
	}
	return p
}

// claimStrings are a claim's string values, as budgets match them: a
// string, or the strings of an array.
func claimStrings(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, item := range v {
			if s, ok := item.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// slugs are the registry's tools' slugs, for suggesting one.
func slugs(reg *registry.Registry) []string {
	_, total := reg.List("", 0, 0)
	vs, _ := reg.List("", total, 0)
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.Tool.Slug
	}
	return out
}

// RunRuleCaseFile is RunRuleCases of the cases in the file at path.
func RunRuleCaseFile(cfg *Config, path string, out io.Writer) (passed bool, err error) {
	cases, err := os.ReadFile(path)
	var pe *fs.PathError
	if errors.As(err, &pe) {
		// The caller names the file; its error need not again.
		return false, fmt.Errorf("cannot %s it: %w", pe.Op, pe.Err)
	}
	if err != nil {
		return false, err
	}
	return RunRuleCases(cfg, cases, out)
}
