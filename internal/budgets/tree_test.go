package budgets

import (
	"strings"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/toolgate/toolgate/toolgatetype"
)

func usd(s string) *decimal.Decimal {
	d := decimal.RequireFromString(s)
	return &d
}

func intp(v int) *int { return &v }

func boolp(v bool) *bool { return &v }

func TestNewRefusesNamingTheField(t *testing.T) {
	t.Parallel()
	ok := func(id string) toolgatetype.BudgetDefinition {
		return toolgatetype.BudgetDefinition{ID: id, DailyLimitUSD: usd("10")}
	}
	with := func(d toolgatetype.BudgetDefinition, f func(*toolgatetype.BudgetDefinition)) toolgatetype.BudgetDefinition {
		f(&d)
		return d
	}
	tests := []struct {
		name string
		defs []toolgatetype.BudgetDefinition
		want string
	}{
		{"cycle of two", []toolgatetype.BudgetDefinition{
			with(ok("acme"), func(d *toolgatetype.BudgetDefinition) { d.Parent = "search" }),
			with(ok("search"), func(d *toolgatetype.BudgetDefinition) { d.Parent = "acme" }),
		}, `budgets[1].parent: "search" and "acme" make a cycle: acme -> search -> acme`},
		{"cycle of three behind a root", []toolgatetype.BudgetDefinition{
			ok("root"),
			with(ok("a"), func(d *toolgatetype.BudgetDefinition) { d.Parent = "c" }),
			with(ok("b"), func(d *toolgatetype.BudgetDefinition) { d.Parent = "a" }),
			with(ok("c"), func(d *toolgatetype.BudgetDefinition) { d.Parent = "b" }),
			with(ok("leaf"), func(d *toolgatetype.BudgetDefinition) { d.Parent = "a" }),
		}, `budgets[3].parent: "c" and "b" make a cycle: a -> c -> b -> a`},
		{"own parent", []toolgatetype.BudgetDefinition{
			with(ok("acme"), func(d *toolgatetype.BudgetDefinition) { d.Parent = "acme" }),
		}, `budgets[0].parent: "acme" and "acme" make a cycle: acme -> acme`},
		{"unknown parent", []toolgatetype.BudgetDefinition{
			ok("acme"),
			with(ok("search"), func(d *toolgatetype.BudgetDefinition) { d.Parent = "acm" }),
		}, `budgets[1].parent: unknown budget "acm"`},
		{"everyone with members", []toolgatetype.BudgetDefinition{
			with(ok("acme"), func(d *toolgatetype.BudgetDefinition) { d.Everyone, d.Members = true, []string{"alice"} }),
		}, `budgets[0].members: a budget of everyone names no members: every principal counts in it`},
		{"everyone with claims", []toolgatetype.BudgetDefinition{
			with(ok("acme"), func(d *toolgatetype.BudgetDefinition) {
				d.Everyone, d.Claims = true, map[string]string{"groups": "staff"}
			}),
		}, `budgets[0].claims: a budget of everyone names no claims: every principal counts in it`},
		{"unknown zone", []toolgatetype.BudgetDefinition{
			with(ok("acme"), func(d *toolgatetype.BudgetDefinition) { d.TimeZone = "Mars/Base" }),
		}, `budgets[0].timeZone: unknown time zone "Mars/Base"`},
		{"the machine's zone", []toolgatetype.BudgetDefinition{
			with(ok("acme"), func(d *toolgatetype.BudgetDefinition) { d.TimeZone = "Local" }),
		}, `budgets[0].timeZone: unknown time zone "Local"`},
		{"too precise", []toolgatetype.BudgetDefinition{
			ok("a"), ok("b"),
			with(ok("c"), func(d *toolgatetype.BudgetDefinition) { d.DailyLimitUSD = usd("1.00001") }),
		}, `budgets[2].dailyLimitUsd: 1.00001 must have at most 4 digits after the point`},
		{"too large", []toolgatetype.BudgetDefinition{
			with(ok("a"), func(d *toolgatetype.BudgetDefinition) { d.MonthlyLimitUSD = usd("123456789012345678901") }),
		}, `budgets[0].monthlyLimitUsd: 123456789012345678901 must have at most 20 digits before the point`},
		{"negative", []toolgatetype.BudgetDefinition{
			with(ok("a"), func(d *toolgatetype.BudgetDefinition) { d.WeeklyLimitUSD = usd("-1") }),
		}, `budgets[0].weeklyLimitUsd: -1 must not be negative`},
		{"a tool's amount", []toolgatetype.BudgetDefinition{
			with(ok("a"), func(d *toolgatetype.BudgetDefinition) {
				d.Tools = map[string]toolgatetype.BudgetToolLimits{"goal-data": {DailyLimitUSD: usd("0.00001")}}
			}),
		}, `budgets[0].tools["goal-data"].dailyLimitUsd: 0.00001 must have at most 4 digits after the point`},
		{"negative rate", []toolgatetype.BudgetDefinition{
			with(ok("a"), func(d *toolgatetype.BudgetDefinition) { d.RateLimitPerMinute = intp(-1) }),
		}, `budgets[0].rateLimitPerMinute: -1 must be at least 1`},
		{"zero rate blocks every call", []toolgatetype.BudgetDefinition{
			with(ok("a"), func(d *toolgatetype.BudgetDefinition) { d.RateLimitPerMinute = intp(0) }),
		}, `budgets[0].rateLimitPerMinute: 0 must be at least 1`},
		{"duplicate id", []toolgatetype.BudgetDefinition{
			ok("acme"), ok("a"), ok("b"), ok("acme"),
		}, `budgets[3].id: duplicate id "acme"`},
		{"no limit", []toolgatetype.BudgetDefinition{
			{ID: "acme", Name: "Acme", Members: []string{"alice"}},
		}, `budgets[0]: a budget needs a limit (dailyLimitUsd, weeklyLimitUsd, monthlyLimitUsd, rateLimitPerMinute or a tool's)`},
		{"a tool allowed with no limit is no limit", []toolgatetype.BudgetDefinition{
			{ID: "acme", Tools: map[string]toolgatetype.BudgetToolLimits{"goal-data": {Allowed: boolp(true)}}},
		}, `budgets[0]: a budget needs a limit`},
		{"fraction above one", []toolgatetype.BudgetDefinition{
			with(ok("a"), func(d *toolgatetype.BudgetDefinition) { d.Alerts = []float64{0.5, 1.5} }),
		}, `budgets[0].alerts[1]: 1.5 is not a fraction in (0, 1]`},
		{"fraction zero", []toolgatetype.BudgetDefinition{
			with(ok("a"), func(d *toolgatetype.BudgetDefinition) { d.Alerts = []float64{0} }),
		}, `budgets[0].alerts[0]: 0 is not a fraction in (0, 1]`},
		{"upper case id", []toolgatetype.BudgetDefinition{ok("Acme")},
			`budgets[0].id: "Acme" must be 1 to 64 characters of a-z, 0-9, "-" and "_"`},
		{"empty id", []toolgatetype.BudgetDefinition{ok("")}, `budgets[0].id: "" must be 1 to 64`},
		{"long id", []toolgatetype.BudgetDefinition{ok(strings.Repeat("a", 65))}, `budgets[0].id: "aaaa`},
		{"empty claim name", []toolgatetype.BudgetDefinition{
			with(ok("a"), func(d *toolgatetype.BudgetDefinition) { d.Claims = map[string]string{"": "search"} }),
		}, `budgets[0].claims: a claim needs a name`},
		{"empty claim value", []toolgatetype.BudgetDefinition{
			with(ok("a"), func(d *toolgatetype.BudgetDefinition) { d.Claims = map[string]string{"groups": ""} }),
		}, `budgets[0].claims["groups"]: a claim needs a value`},
		{"a claim tokens never pass", []toolgatetype.BudgetDefinition{
			with(ok("a"), func(d *toolgatetype.BudgetDefinition) {
				d.Claims = map[string]string{"groups": "search", "iss": "https://idp.example"}
			}),
		}, `budgets[0].claims["iss"]: "iss" is about the token, not its bearer, and is never matched`},
		{"the token's audience", []toolgatetype.BudgetDefinition{
			ok("a"), with(ok("b"), func(d *toolgatetype.BudgetDefinition) { d.Claims = map[string]string{"aud": "x"} }),
		}, `budgets[1].claims["aud"]: "aud" is about the token`},
		{"empty member", []toolgatetype.BudgetDefinition{
			with(ok("a"), func(d *toolgatetype.BudgetDefinition) { d.Members = []string{"alice", ""} }),
		}, `budgets[0].members: an empty principal id`},
		{"name with a NUL", []toolgatetype.BudgetDefinition{
			with(ok("a"), func(d *toolgatetype.BudgetDefinition) { d.Name = "Search\x00team" }),
		}, `budgets[0].name: holds the control character U+0000`},
		{"member with an escape", []toolgatetype.BudgetDefinition{
			with(ok("a"), func(d *toolgatetype.BudgetDefinition) { d.Members = []string{"alice", "\x1bbob"} }),
		}, `budgets[0].members[1]: holds the control character U+001B`},
		{"approver with a control character", []toolgatetype.BudgetDefinition{
			with(ok("a"), func(d *toolgatetype.BudgetDefinition) { d.Approvers = []string{"pat\x07"} }),
		}, `budgets[0].approvers[0]: holds the control character U+0007`},
		{"claim value with a NUL", []toolgatetype.BudgetDefinition{
			with(ok("a"), func(d *toolgatetype.BudgetDefinition) { d.Claims = map[string]string{"groups": "search\x00"} }),
		}, `budgets[0].claims.groups: holds the control character U+0000`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tree, err := New(tt.defs)
			if err == nil {
				t.Fatalf("New = %v, want an error starting %q", tree, tt.want)
			}
			if !strings.HasPrefix(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("New error = %q, want one line starting %q", err, tt.want)
			}
		})
	}
}

func TestNewBuildsTheTree(t *testing.T) {
	t.Parallel()
	tree, err := New([]toolgatetype.BudgetDefinition{
		{ID: "acme", Name: "Acme", MonthlyLimitUSD: usd("1000.0000")},
		{ID: "search-team", Name: "Search team", Parent: "acme", Members: []string{"alice", "bob"},
			Claims: map[string]string{"groups": "search"}, DailyLimitUSD: usd("50"), WeeklyLimitUSD: usd("200"),
			RateLimitPerMinute: intp(600), TimeZone: "Europe/Berlin", Alerts: []float64{1, 0.5, 0.8, 0.5},
			Tools: map[string]toolgatetype.BudgetToolLimits{
				"goal-data": {Allowed: boolp(true), DailyLimitUSD: usd("5")},
				"web.fetch": {Allowed: boolp(false)},
			}},
		{ID: "blocked", Tools: map[string]toolgatetype.BudgetToolLimits{"web.fetch": {Allowed: boolp(false)}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	s := tree.Get("search-team")
	if s == nil || s.Parent != tree.Get("acme") || s.Location.String() != "Europe/Berlin" || *s.RatePerMinute != 600 {
		t.Fatalf("search-team = %+v", s)
	}
	if got := tree.Get("blocked").Name; got != "blocked" {
		t.Errorf("a budget with no name is named %q, want its id", got)
	}
	if tree.Get("acme").Location.String() != "UTC" {
		t.Errorf("default zone = %v, want UTC", tree.Get("acme").Location)
	}
	if got := s.Alerts; len(got) != 3 || got[0] != 0.5 || got[1] != 0.8 || got[2] != 1 {
		t.Errorf("alerts = %v, want [0.5 0.8 1]", got)
	}
	if l := s.Limits[toolgatetype.BudgetDaily]; !l.Equal(decimal.RequireFromString("50")) || len(s.Limits) != 2 {
		t.Errorf("limits = %v", s.Limits)
	}
	if tl := s.Tools["goal-data"]; !tl.Allowed || !tl.Limits[toolgatetype.BudgetDaily].Equal(decimal.RequireFromString("5")) {
		t.Errorf("goal-data = %+v", tl)
	}
	if s.Tools["web.fetch"].Allowed {
		t.Error("web.fetch is allowed, want blocked")
	}
	var ids []string
	for _, n := range tree.Nodes() {
		ids = append(ids, n.ID)
	}
	if strings.Join(ids, ",") != "acme,search-team,blocked" {
		t.Errorf("Nodes = %v, want configuration order", ids)
	}
	if tree.Get("nope") != nil {
		t.Error("Get of an unknown id is not nil")
	}
}

// A claim named with dots is a top-level claim of that name, as the
// namespaced claims some identity providers require ("https://example.com/
// groups"), so it can match and is accepted.
func TestNewAcceptsNamespacedClaims(t *testing.T) {
	t.Parallel()
	tree, err := New([]toolgatetype.BudgetDefinition{{ID: "search", DailyLimitUSD: usd("10"),
		Claims: map[string]string{"https://example.com/groups": "search"}}})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	got := tree.For("sam", map[string][]string{"https://example.com/groups": {"search"}})
	if len(got) != 1 || got[0].ID != "search" {
		t.Fatalf("For = %v, want the search budget", got)
	}
}
