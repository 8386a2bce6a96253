package toolgate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/rules"
	"github.com/toolgate/toolgate/toolgatetype"
)

// prodRule is the contract's deny on an argument, on the echo tool's v.
var prodRule = rules.Rule{
	Name:    "prod-is-for-sre",
	When:    "tool.slug == 'echo' && input.v.startsWith('/prod/') && !('sre' in principal.groups)",
	Effect:  rules.Deny,
	Message: "writes under /prod are for the SRE team",
}

func withRules(rs ...rules.Rule) envOption {
	return func(c *toolgate.Config) { c.Rules = rs }
}

// sre is the context of a caller whose token puts it in the sre group.
func sre() context.Context {
	return rules.WithClaims(context.Background(), map[string]any{"groups": []any{"sre"}, "sub": "alice"})
}

func TestRuleDeniesACallOnItsArgumentAndLeavesNothing(t *testing.T) {
	e := newEnv(t, []toolSpec{callable}, withRules(prodRule))
	ctx := context.Background()
	q := e.quote("alice", "echo")
	req := approvedCall(q, "k1", "/prod/db")
	_, err := e.gw.Call(ctx, "alice", req)
	te := requireCode(t, err, toolgatetype.CodeRuleDenied)
	require.Equal(t, &toolgatetype.RuleRef{Name: "prod-is-for-sre", Message: "writes under /prod are for the SRE team"}, te.Rule)
	require.Equal(t, "Rule prod-is-for-sre: writes under /prod are for the SRE team", te.Message)
	body := toolgatetype.BodyOf(err)
	require.Equal(t, "prod-is-for-sre", body.Error.Rule.Name)
	e.requireNoTrace("alice", "k1", q.Quote.ID)

	// The key and the quote are still the caller's to use.
	res, err := e.gw.Call(ctx, "alice", approvedCall(q, "k1", "/dev/db"))
	require.NoError(t, err)
	require.Equal(t, toolgatetype.StatusCompleted, res.Execution.Status)
	require.Empty(t, res.Execution.Rules, "no rule took part")

	// A caller in the sre group is not denied.
	q = e.quote("alice", "echo")
	res, err = e.gw.Call(sre(), "alice", approvedCall(q, "k2", "/prod/db"))
	require.NoError(t, err)
	require.Equal(t, toolgatetype.StatusCompleted, res.Execution.Status)
}

func TestRuleDenyRefusesCallToolAndApprovalRequests(t *testing.T) {
	e := newEnv(t, []toolSpec{callable}, withRules(prodRule))
	ctx := context.Background()
	out := e.gw.CallTool(ctx, "alice", toolgatetype.ToolCallRequest{Tool: "echo", Input: json.RawMessage(`{"v":"/prod/x"}`), IdempotencyKey: "k1"})
	require.NotNil(t, out.Refusal)
	require.Equal(t, toolgatetype.CodeRuleDenied, out.Refusal.Code)
	require.Equal(t, "prod-is-for-sre", out.Refusal.Rule.Name)

	q := e.quote("alice", "echo")
	_, err := e.gw.RequestApproval(ctx, "alice", toolgatetype.ApprovalInput{QuoteID: q.Quote.ID, Input: json.RawMessage(`{"v":"/prod/x"}`)})
	requireCode(t, err, toolgatetype.CodeRuleDenied)
	e.upstream.RequireCalls(t, 0)
}

func TestQuoteShowsAnInputRulePendingAndDecidesItWithTheInput(t *testing.T) {
	e := newEnv(t, []toolSpec{callable}, withRules(prodRule, rules.Rule{Name: "not-echo", When: "tool.slug == 'other'", Effect: rules.Deny}))
	ctx := context.Background()
	q, err := e.gw.Quote(ctx, "alice", "echo")
	require.NoError(t, err)
	require.True(t, q.Policy.Callable)
	require.Equal(t, []toolgatetype.PolicyRule{{Name: "prod-is-for-sre", Effect: "deny", Message: "writes under /prod are for the SRE team", Pending: true}}, q.Policy.Rules,
		"the rule that cannot match echo is not listed")

	q, err = e.gw.QuoteWith(ctx, "alice", "echo", toolgatetype.QuoteOptions{Input: json.RawMessage(`{"v":"/prod/x"}`)})
	require.NoError(t, err)
	require.False(t, q.Policy.Callable)
	require.Contains(t, q.Policy.Reasons, "Rule prod-is-for-sre: writes under /prod are for the SRE team")
	require.Equal(t, []toolgatetype.PolicyRule{{Name: "prod-is-for-sre", Effect: "deny", Message: "writes under /prod are for the SRE team"}}, q.Policy.Rules)

	q, err = e.gw.QuoteWith(ctx, "alice", "echo", toolgatetype.QuoteOptions{Input: json.RawMessage(`{"v":"/dev/x"}`)})
	require.NoError(t, err)
	require.True(t, q.Policy.Callable)
	require.Empty(t, q.Policy.Rules, "a rule that does not match is not listed")

	_, err = e.gw.QuoteWith(ctx, "alice", "echo", toolgatetype.QuoteOptions{Input: json.RawMessage(`{"v":`)})
	requireCode(t, err, toolgatetype.CodeInvalidRequest)
}

// bigCalls asks the leads to approve any call over five cents.
var bigCalls = rules.Rule{Name: "big-calls-need-a-lead", When: "call.totalUsd > 0.05", Effect: rules.Ask, Approvers: []string{"lead"}}

func TestAskRuleSendsACallerModeCallToTheApproverItNames(t *testing.T) {
	e := newEnv(t, []toolSpec{paidCallable}, withRules(bigCalls), func(c *toolgate.Config) {
		c.Approvers = toolgatetype.StaticApprovers{Approvers: map[string][]string{"lead": nil, "ops": {"alice"}}}
	})
	ctx := context.Background()
	q := e.quote("alice", "paid")
	require.Equal(t, toolgatetype.RequirementPerCall, q.Policy.Approval.Requirement, "an ask raises covered_by_user_policy to per_call")
	require.Equal(t, "big-calls-need-a-lead", q.Policy.Rules[0].Name)

	// The caller's own approval of the digest is not enough.
	_, err := e.gw.Call(ctx, "alice", approvedCall(q, "k1", "x"))
	te := requireCode(t, err, toolgatetype.CodeApprovalRequired)
	require.True(t, te.GrantRequired)
	require.Contains(t, te.Message, "big-calls-need-a-lead")

	r, err := e.gw.RequestApproval(ctx, "alice", toolgatetype.ApprovalInput{QuoteID: q.Quote.ID, Input: json.RawMessage(`{"v":"x"}`)})
	require.NoError(t, err)

	// alice's own approver is not the one the rule names: the request is
	// not theirs to see or decide.
	list, err := e.gw.ListApprovalRequests(ctx, "ops", toolgatetype.ApprovalListOptions{})
	require.NoError(t, err)
	require.Empty(t, list.ApprovalRequests)
	_, err = e.gw.DecideApproval(ctx, "ops", r.ID, toolgatetype.Decision{Approve: true})
	requireCode(t, err, toolgatetype.CodeApprovalRequestNotFound)

	list, err = e.gw.ListApprovalRequests(ctx, "lead", toolgatetype.ApprovalListOptions{})
	require.NoError(t, err)
	require.Len(t, list.ApprovalRequests, 1)
	require.Equal(t, r.ID, list.ApprovalRequests[0].ID)
	_, err = e.gw.DecideApproval(ctx, "lead", r.ID, toolgatetype.Decision{Approve: true})
	require.NoError(t, err)

	res, err := e.gw.Call(ctx, "alice", toolgatetype.CallRequest{Tool: "paid", QuoteID: q.Quote.ID, Input: json.RawMessage(`{"v":"x"}`), IdempotencyKey: "k1", ApprovalGrant: r.ID})
	require.NoError(t, err)
	require.Equal(t, toolgatetype.StatusCompleted, res.Execution.Status)
	uses := []toolgatetype.RuleUse{{Name: "big-calls-need-a-lead", Effect: "ask", Mode: "enforce"}}
	require.Equal(t, uses, res.Execution.Rules)

	got, err := e.gw.GetExecution(ctx, "alice", res.Execution.ID)
	require.NoError(t, err)
	require.Equal(t, uses, got.Execution.Rules, "the stored execution names the rule")
	page, err := e.gw.ListExecutions(ctx, "alice", toolgatetype.ExecutionFilter{})
	require.NoError(t, err)
	require.Equal(t, uses, page.Executions[0].Rules, "so does the audit listing")
}

func TestAskRuleWaitsForTheNamedApproverInCallTool(t *testing.T) {
	e := newEnv(t, []toolSpec{paidCallable}, withRules(bigCalls), func(c *toolgate.Config) {
		c.Approvers = toolgatetype.StaticApprovers{Approvers: map[string][]string{"lead": nil}}
	})
	ctx := context.Background()
	call := toolgatetype.ToolCallRequest{Tool: "paid", Input: json.RawMessage(`{"v":"x"}`), IdempotencyKey: "k1"}
	out := e.gw.CallTool(ctx, "alice", call)
	require.Nil(t, out.Refusal)
	require.NotNil(t, out.Approval, "alice is in caller mode, but the rule asks a person")
	require.Equal(t, toolgatetype.ApprovalModeApprover, out.Approval.Mode)
	require.NotNil(t, out.Approval.Request)
	e.upstream.RequireCalls(t, 0)

	_, err := e.gw.DecideApproval(ctx, "lead", out.Approval.Request.ID, toolgatetype.Decision{Approve: true})
	require.NoError(t, err)
	out = e.gw.CallTool(ctx, "alice", call)
	require.Nil(t, out.Refusal)
	require.NotNil(t, out.Result)
	require.Equal(t, toolgatetype.StatusCompleted, out.Result.Execution.Status)
	require.Equal(t, "big-calls-need-a-lead", out.Result.Execution.Rules[0].Name)
}

func TestHideRuleMakesTheToolAbsentForOnePrincipal(t *testing.T) {
	hide := rules.Rule{Name: "bob-sees-no-echo", When: "principal.id == 'bob' && tool.slug == 'echo'", Effect: rules.Hide}
	e := newEnv(t, []toolSpec{callable, {slug: "other", immutable: true, capabilities: readOnly()}}, withRules(hide))
	ctx := context.Background()

	_, err := e.gw.Quote(ctx, "bob", "echo")
	absent := requireCode(t, err, toolgatetype.CodeToolNotFound)
	_, err = e.gw.Quote(ctx, "bob", "no-such-tool")
	require.Equal(t, strings.ReplaceAll(absent.Message, "echo", "no-such-tool"), requireCode(t, err, toolgatetype.CodeToolNotFound).Message,
		"a hidden tool is answered as one that does not exist")

	q := e.quote("alice", "echo")
	_, err = e.gw.Call(ctx, "bob", approvedCall(q, "k1", "x"))
	requireCode(t, err, toolgatetype.CodeToolNotFound)
	out := e.gw.CallTool(ctx, "bob", toolgatetype.ToolCallRequest{Tool: "echo", Input: json.RawMessage(`{"v":"x"}`), IdempotencyKey: "k2"})
	require.Equal(t, toolgatetype.CodeToolNotFound, out.Refusal.Code)
	_, err = e.gw.Entry(ctx, "echo", toolgatetype.EntryOptions{Principal: "bob"})
	requireCode(t, err, toolgatetype.CodeToolNotFound)

	slugs := func(principal string) ([]string, int) {
		entries, total, err := e.gw.List(ctx, "", 100, 0, toolgatetype.EntryOptions{Principal: principal})
		require.NoError(t, err)
		var out []string
		for _, en := range entries {
			out = append(out, en.Slug)
		}
		return out, total
	}
	got, total := slugs("bob")
	require.Equal(t, []string{"other"}, got)
	require.Equal(t, 1, total)
	got, total = slugs("alice")
	require.ElementsMatch(t, []string{"echo", "other"}, got)
	require.Equal(t, 2, total)

	// alice still calls it.
	res, err := e.gw.Call(ctx, "alice", approvedCall(q, "k3", "x"))
	require.NoError(t, err)
	require.Equal(t, toolgatetype.StatusCompleted, res.Execution.Status)

	// Its docs name the rule.
	en, err := e.gw.Entry(ctx, "echo", toolgatetype.EntryOptions{})
	require.NoError(t, err)
	require.Equal(t, []toolgatetype.ToolRule{{Name: "bob-sees-no-echo", Effect: "hide", Mode: "enforce", Message: "bob-sees-no-echo"}}, en.Rules)
	en, err = e.gw.Entry(ctx, "other", toolgatetype.EntryOptions{})
	require.NoError(t, err)
	require.Empty(t, en.Rules)
}

func TestAuditRuleChangesNothingAndIsCountedAndRecorded(t *testing.T) {
	audit := prodRule
	audit.Mode = rules.Audit
	reg := prometheus.NewRegistry()
	e := newEnv(t, []toolSpec{callable}, withRules(audit), func(c *toolgate.Config) { c.Metrics = reg })
	ctx := context.Background()
	q := e.quote("alice", "echo")
	res, err := e.gw.Call(ctx, "alice", approvedCall(q, "k1", "/prod/db"))
	require.NoError(t, err)
	require.Equal(t, toolgatetype.StatusCompleted, res.Execution.Status)
	require.Equal(t, []toolgatetype.RuleUse{{Name: "prod-is-for-sre", Effect: "deny", Mode: "audit"}}, res.Execution.Rules)
	require.Equal(t, 1.0, counterValue(t, reg, "toolgate_rule_matches_total", map[string]string{"rule": "prod-is-for-sre", "effect": "deny", "mode": "audit"}))
}

func TestRuleFailingWhileRunningDeniesAndIsLoggedOnceAMinute(t *testing.T) {
	broken := rules.Rule{Name: "dept-only", When: "principal.claims.dept == 'sales'", Effect: rules.Deny}
	reg := prometheus.NewRegistry()
	var logs bytes.Buffer
	e := newEnv(t, []toolSpec{callable}, withRules(broken), func(c *toolgate.Config) {
		c.Metrics, c.Logger = reg, slog.New(slog.NewJSONHandler(&logs, nil))
	})
	ctx := context.Background()
	for i := range 3 {
		q := e.quote("alice", "echo")
		_, err := e.gw.Call(ctx, "alice", approvedCall(q, "k"+string(rune('a'+i)), "x"))
		requireCode(t, err, toolgatetype.CodeRuleDenied)
	}
	require.Equal(t, 3.0, counterValue(t, reg, "toolgate_rule_errors_total", map[string]string{"rule": "dept-only"}))
	require.Equal(t, 1, strings.Count(logs.String(), "rule failed while running"), logs.String())
	require.Contains(t, logs.String(), `"rule":"dept-only"`)

	e.clock.Advance(61 * time.Second)
	q := e.quote("alice", "echo")
	_, err := e.gw.Call(ctx, "alice", approvedCall(q, "kz", "x"))
	requireCode(t, err, toolgatetype.CodeRuleDenied)
	require.Equal(t, 2, strings.Count(logs.String(), "rule failed while running"))

	// With the claim there, the rule decides as written.
	q = e.quote("alice", "echo")
	claims := rules.WithClaims(ctx, map[string]any{"dept": "engineering"})
	res, err := e.gw.Call(claims, "alice", approvedCall(q, "ky", "x"))
	require.NoError(t, err)
	require.Equal(t, toolgatetype.StatusCompleted, res.Execution.Status)
}

func TestSetRulesKeepsWhatRunsOnABadRule(t *testing.T) {
	e := newEnv(t, []toolSpec{callable}, withRules(prodRule))
	err := e.gw.SetRules([]rules.Rule{{Name: "bad", When: "inpt.v == 'x'", Effect: rules.Deny}})
	var re *rules.Error
	require.ErrorAs(t, err, &re)
	require.Equal(t, "bad", re.Name)
	ctx := context.Background()
	q := e.quote("alice", "echo")
	_, err = e.gw.Call(ctx, "alice", approvedCall(q, "k1", "/prod/x"))
	requireCode(t, err, toolgatetype.CodeRuleDenied)

	require.NoError(t, e.gw.SetRules(nil))
	_, err = e.gw.Call(ctx, "alice", approvedCall(q, "k1", "/prod/x"))
	require.NoError(t, err)
}

// A rule on who calls is decided once per caller and kept; what it reads
// of the caller changing (its budgets, on a reload) or the rules changing
// decides it anew.
func TestRulesOnTheCallerFollowItsBudgetsAndTheRules(t *testing.T) {
	frozen := rules.Rule{Name: "frozen-team", When: "'frozen' in principal.budgets", Effect: rules.Deny}
	e := newEnv(t, []toolSpec{callable}, withRules(frozen))
	ctx := context.Background()
	call := func(key string) error {
		q := e.quote("alice", "echo")
		_, err := e.gw.Call(ctx, "alice", approvedCall(q, key, "x"))
		return err
	}
	require.NoError(t, call("k1"))
	require.NoError(t, e.gw.SetBudgets([]toolgatetype.BudgetDefinition{{ID: "frozen", Members: []string{"alice"}, DailyLimitUSD: dec("100")}}))
	requireCode(t, call("k2"), toolgatetype.CodeRuleDenied)
	require.NoError(t, e.gw.SetBudgets(nil))
	require.NoError(t, call("k3"))
	require.NoError(t, e.gw.SetBudgets([]toolgatetype.BudgetDefinition{{ID: "frozen", Members: []string{"alice"}, DailyLimitUSD: dec("100")}}))
	requireCode(t, call("k4"), toolgatetype.CodeRuleDenied)
	require.NoError(t, e.gw.SetRules(nil))
	require.NoError(t, call("k5"))
}
