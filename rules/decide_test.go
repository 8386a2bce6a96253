package rules_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/rules"
)

// compile compiles rs, which must compile.
func compile(t *testing.T, rs ...rules.Rule) *rules.Set {
	t.Helper()
	set, err := rules.Compile(rs)
	require.NoError(t, err)
	return set
}

// subject is alice (group eng) calling fs.write with input, its price $1
// and fee $0.10.
func subject(input map[string]any) *rules.Subject {
	return &rules.Subject{
		Principal:  &rules.Principal{ID: "alice", Groups: []string{"eng"}, Claims: map[string]any{}, Budgets: []string{}, ApprovalMode: "caller"},
		Tool:       &rules.Tool{Slug: "fs.write", Name: "Write a file", Provider: "fs", Risk: "high", Tags: []string{}, Capabilities: map[string]any{}, PriceUSD: 1},
		Input:      input,
		InputKnown: input != nil,
		Cost:       rules.Cost{PriceUSD: 1, FeeUSD: 0.1, TotalUSD: 1.1},
		Now:        time.Date(2026, 3, 1, 3, 0, 0, 0, time.UTC),
	}
}

// names are the names of ms, in order.
func names(ms []rules.Match) []string {
	out := []string{}
	for _, m := range ms {
		out = append(out, m.Name)
	}
	return out
}

func TestDecideEffects(t *testing.T) {
	t.Parallel()
	prod := map[string]any{"path": "/prod/x"}
	for _, tc := range []struct {
		name     string
		rule     rules.Rule
		input    map[string]any
		denied   bool
		asked    bool
		matching bool
	}{
		{"deny on an argument", rules.Rule{Name: "prod", When: "input.path.startsWith('/prod/')", Effect: rules.Deny}, prod, true, false, true},
		{"deny not matching", rules.Rule{Name: "prod", When: "input.path.startsWith('/prod/')", Effect: rules.Deny}, map[string]any{"path": "/tmp/x"}, false, false, false},
		{"ask over a price", rules.Rule{Name: "big", When: "call.totalUsd > 1.0", Effect: rules.Ask}, prod, false, true, true},
		{"ask under a price", rules.Rule{Name: "big", When: "call.totalUsd > 5.0", Effect: rules.Ask}, prod, false, false, false},
		{"audit deny changes nothing", rules.Rule{Name: "prod", When: "true", Effect: rules.Deny, Mode: rules.Audit}, prod, false, false, true},
		{"audit ask changes nothing", rules.Rule{Name: "big", When: "true", Effect: rules.Ask, Mode: rules.Audit}, prod, false, false, true},
		{"hide is not decided per call", rules.Rule{Name: "h", When: "true", Effect: rules.Hide}, prod, false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			set := compile(t, tc.rule)
			d := set.Decide(subject(tc.input))
			assert.Equal(t, tc.denied, d.Denied() != nil, "denied")
			asked, _ := d.Asked()
			assert.Equal(t, tc.asked, asked, "asked")
			if !tc.matching {
				assert.Empty(t, d.Matches)
				return
			}
			require.Len(t, d.Matches, 1)
			m := d.Matches[0]
			assert.Equal(t, tc.rule.Name, m.Name)
			assert.Equal(t, tc.rule.Effect, m.Effect)
			want := tc.rule.Mode
			if want == "" {
				want = rules.Enforce
			}
			assert.Equal(t, want, m.Mode, "the mode, defaulted")
			assert.False(t, m.Pending)
			assert.NoError(t, m.Err)
		})
	}
}

// A rule's message is its own, else its name.
func TestDecideMessage(t *testing.T) {
	t.Parallel()
	set := compile(t,
		rules.Rule{Name: "with-message", When: "true", Effect: rules.Deny, Message: "writes under /prod are for the SRE team"},
		rules.Rule{Name: "without", When: "true", Effect: rules.Deny})
	d := set.Decide(subject(map[string]any{}))
	require.Len(t, d.Matches, 2)
	assert.Equal(t, "writes under /prod are for the SRE team", d.Matches[0].Message)
	assert.Equal(t, "without", d.Matches[1].Message)
	assert.Equal(t, "with-message", d.Denied().Name, "the first deny")
}

func TestDecideDenyOutranksAsk(t *testing.T) {
	t.Parallel()
	set := compile(t,
		rules.Rule{Name: "lead", When: "true", Effect: rules.Ask, Approvers: []string{"leads"}},
		rules.Rule{Name: "no", When: "true", Effect: rules.Deny})
	d := set.Decide(subject(map[string]any{}))
	assert.Equal(t, []string{"lead", "no"}, names(d.Matches), "each rule that matches is named, in order")
	require.NotNil(t, d.Denied())
	assert.Equal(t, "no", d.Denied().Name, "the deny decides, though the ask comes first")
}

func TestDecideAskedUnionsApprovers(t *testing.T) {
	t.Parallel()
	set := compile(t,
		rules.Rule{Name: "a", When: "true", Effect: rules.Ask, Approvers: []string{"leads", "sre"}},
		rules.Rule{Name: "b", When: "true", Effect: rules.Ask},
		rules.Rule{Name: "c", When: "true", Effect: rules.Ask, Approvers: []string{"sre", "finance"}},
		rules.Rule{Name: "d", When: "true", Effect: rules.Ask, Approvers: []string{"audit-only"}, Mode: rules.Audit})
	d := set.Decide(subject(map[string]any{}))
	asked, approvers := d.Asked()
	assert.True(t, asked)
	assert.Equal(t, []string{"leads", "sre", "finance"}, approvers, "each once, an audit rule's not among them")

	only := compile(t, rules.Rule{Name: "b", When: "true", Effect: rules.Ask})
	d = only.Decide(subject(map[string]any{}))
	asked, approvers = d.Asked()
	assert.True(t, asked)
	assert.Empty(t, approvers, "none named: the caller's own approvers")
}

// A quote knows no input: a rule that depends on it is pending, one that
// matches whatever it is matches, one that cannot match is not there.
func TestDecidePartial(t *testing.T) {
	t.Parallel()
	set := compile(t,
		rules.Rule{Name: "depends", When: "input.path.startsWith('/prod/')", Effect: rules.Deny},
		rules.Rule{Name: "whatever-the-input", When: "call.totalUsd > 1.0 || input.path == '/x'", Effect: rules.Ask},
		rules.Rule{Name: "never", When: "tool.slug == 'other' && input.path == '/x'", Effect: rules.Deny},
		rules.Rule{Name: "no-input", When: "'eng' in principal.groups", Effect: rules.Deny, Mode: rules.Audit})
	d := set.Decide(subject(nil))
	require.Equal(t, []string{"depends", "whatever-the-input", "no-input"}, names(d.Matches))
	assert.True(t, d.Matches[0].Pending)
	assert.False(t, d.Matches[1].Pending)
	assert.False(t, d.Matches[2].Pending)
	assert.Nil(t, d.Denied(), "a pending deny does not deny")
	asked, _ := d.Asked()
	assert.True(t, asked, "the ask matches whatever the input")

	d = set.Decide(subject(map[string]any{"path": "/tmp/x"}))
	assert.Equal(t, []string{"whatever-the-input", "no-input"}, names(d.Matches), "with the input known, nothing is pending")
}

// A rule that fails while running (a missing key read without has())
// matches, with the error: a deny or ask fails closed.
func TestDecideRuntimeErrorMatches(t *testing.T) {
	t.Parallel()
	set := compile(t,
		rules.Rule{Name: "careless", When: "input.path.startsWith('/prod/')", Effect: rules.Deny},
		rules.Rule{Name: "careful", When: "has(input.path) && input.path.startsWith('/prod/')", Effect: rules.Deny})
	d := set.Decide(subject(map[string]any{"other": 1.0}))
	require.Equal(t, []string{"careless"}, names(d.Matches))
	assert.Error(t, d.Matches[0].Err)
	assert.Contains(t, d.Matches[0].Err.Error(), "path")
	require.NotNil(t, d.Denied(), "fails closed")
}

func TestHidden(t *testing.T) {
	t.Parallel()
	s := subject(nil)
	support := &rules.Principal{ID: "sam", Groups: []string{"support"}, Claims: map[string]any{}, Budgets: []string{}}
	hide := rules.Rule{Name: "support-sees-support-tools", When: "'support' in principal.groups && !(tool.slug in ['ticket-reply', 'kb-search'])", Effect: rules.Hide}

	set := compile(t, hide)
	hidden, ms := set.Hidden(support, s.Tool)
	assert.True(t, hidden)
	assert.Equal(t, []string{"support-sees-support-tools"}, names(ms))
	hidden, ms = set.Hidden(s.Principal, s.Tool)
	assert.False(t, hidden, "not in support")
	assert.Empty(t, ms)
	hidden, _ = set.Hidden(support, &rules.Tool{Slug: "kb-search", Tags: []string{}})
	assert.False(t, hidden, "a support tool")

	hide.Mode = rules.Audit
	audit := compile(t, hide)
	hidden, ms = audit.Hidden(support, s.Tool)
	assert.False(t, hidden, "an audit rule hides nothing")
	require.Len(t, ms, 1, "but its match is told, for counting")
	assert.Equal(t, rules.Audit, ms[0].Mode)

	none := compile(t, rules.Rule{Name: "d", When: "true", Effect: rules.Deny})
	hidden, ms = none.Hidden(support, s.Tool)
	assert.False(t, hidden)
	assert.Nil(t, ms)
}

func TestAppliesTo(t *testing.T) {
	t.Parallel()
	set := compile(t,
		rules.Rule{Name: "fs-only", When: "tool.slug.startsWith('fs.') && input.path.startsWith('/prod/')", Effect: rules.Deny},
		rules.Rule{Name: "web-only", When: "tool.slug.startsWith('web.') && call.totalUsd > 5.0", Effect: rules.Ask},
		rules.Rule{Name: "everyone", When: "!('sre' in principal.groups)", Effect: rules.Hide},
		rules.Rule{Name: "high-risk", When: "tool.risk == 'high'", Effect: rules.Deny, Mode: rules.Audit})
	var got []string
	for _, r := range set.AppliesTo(subject(nil).Tool) {
		got = append(got, r.Name)
	}
	assert.Equal(t, []string{"fs-only", "everyone", "high-risk"}, got)
	assert.Nil(t, (*rules.Set)(nil).AppliesTo(subject(nil).Tool))
}

// A nil or empty Set decides nothing.
func TestEmptySet(t *testing.T) {
	t.Parallel()
	for _, set := range []*rules.Set{nil, compile(t)} {
		d := set.Decide(subject(map[string]any{}))
		assert.Empty(t, d.Matches)
		assert.Nil(t, d.Denied())
		hidden, _ := set.Hidden(subject(nil).Principal, subject(nil).Tool)
		assert.False(t, hidden)
		assert.Zero(t, set.Len())
	}
}

func TestForCallDecidesRulesOnTheCostAlone(t *testing.T) {
	set := compile(t,
		rules.Rule{Name: "big", When: "call.totalUsd > 5.0", Effect: rules.Ask},
		rules.Rule{Name: "small-for-eng", When: "call.totalUsd < 2.0 && 'eng' in principal.groups", Effect: rules.Deny},
		rules.Rule{Name: "other-tool", When: "tool.slug == 'x'", Effect: rules.Deny},
	)
	s := subject(map[string]any{})
	narrowed := set.ForCall(s.Tool, s.Cost)
	assert.Equal(t, []string{"small-for-eng"}, ruleNames(narrowed.Rules()), "at $1.10 the big rule cannot match; nor can another tool's")
	assert.Equal(t, names(set.Decide(s).Matches), names(narrowed.Decide(s).Matches), "the narrowed set decides as the whole")
	assert.Len(t, set.For(s.Tool).Rules(), 2, "with the cost unknown, the big rule may still match")
}

func TestStaticDecisionsAreTheSameAsDecidingEveryRule(t *testing.T) {
	set := compile(t,
		rules.Rule{Name: "eng-prod", When: "'eng' in principal.groups && input.path.startsWith('/prod/')", Effect: rules.Deny},
		rules.Rule{Name: "alice-asks", When: "principal.id == 'alice'", Effect: rules.Ask},
		rules.Rule{Name: "night", When: "now.getHours() < 6", Effect: rules.Deny, Mode: rules.Audit},
		rules.Rule{Name: "dept", When: "principal.claims.dept == 'x'", Effect: rules.Deny},
		rules.Rule{Name: "bob", When: "principal.id == 'bob'", Effect: rules.Deny},
	)
	require.True(t, set.HasStatic())
	for _, input := range []map[string]any{nil, {"path": "/prod/a"}, {"path": "/dev/a"}} {
		s := subject(input)
		st := set.DecideStatic(s)
		whole, split := set.Decide(s), set.DecideWith(s, st)
		assert.Equal(t, names(whole.Matches), names(split.Matches), "input %v", input)
		for i := range whole.Matches {
			assert.Equal(t, whole.Matches[i].Pending, split.Matches[i].Pending)
			assert.Equal(t, whole.Matches[i].Err != nil, split.Matches[i].Err != nil)
		}
	}
	// A static decision of another set is not used for this one.
	other := compile(t, rules.Rule{Name: "alice-asks", When: "principal.id == 'nobody'", Effect: rules.Ask})
	s := subject(map[string]any{"path": "/dev/a"})
	assert.Equal(t, names(set.Decide(s).Matches), names(set.DecideWith(s, other.DecideStatic(s)).Matches))
}

func ruleNames(rs []rules.Rule) []string {
	out := []string{}
	for _, r := range rs {
		out = append(out, r.Name)
	}
	return out
}
