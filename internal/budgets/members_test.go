package budgets

import (
	"strings"
	"testing"

	"github.com/toolgate/toolgate/toolgatetype"
)

func TestFor(t *testing.T) {
	t.Parallel()
	lim := usd("10")
	tree, err := New([]toolgatetype.BudgetDefinition{
		{ID: "acme", MonthlyLimitUSD: lim, Members: []string{"ceo"}},
		{ID: "eng", Parent: "acme", MonthlyLimitUSD: lim},
		{ID: "search", Parent: "eng", DailyLimitUSD: lim, Members: []string{"alice", "bob", "alice"},
			Claims: map[string]string{"groups": "search"}},
		{ID: "ads", Parent: "eng", DailyLimitUSD: lim, Members: []string{"bob"}},
		{ID: "sales", Parent: "acme", DailyLimitUSD: lim, Claims: map[string]string{"groups": "sales", "tenant": "acme"}},
		{ID: "other", DailyLimitUSD: lim, Members: []string{"zoe"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		principal string
		claims    map[string][]string
		want      string
	}{
		{"member", "alice", nil, "search,eng,acme"},
		{"two teams under one org", "bob", nil, "search,ads,eng,acme"},
		{"member of the root", "ceo", nil, "acme"},
		{"nobody", "mallory", nil, ""},
		{"string claim", "carol", map[string][]string{"groups": {"search"}}, "search,eng,acme"},
		{"array claim", "carol", map[string][]string{"groups": {"ops", "search"}}, "search,eng,acme"},
		{"claim is case-sensitive", "carol", map[string][]string{"groups": {"Search"}}, ""},
		{"member and claim once", "alice", map[string][]string{"groups": {"search"}}, "search,eng,acme"},
		{"every claim must match", "dan", map[string][]string{"groups": {"sales"}}, ""},
		{"every claim matches", "dan", map[string][]string{"groups": {"sales"}, "tenant": {"acme"}}, "sales,acme"},
		{"member of one, claims another", "zoe", map[string][]string{"groups": {"search"}}, "search,other,eng,acme"},
		{"teams at different depths", "ceo", map[string][]string{"groups": {"sales", "search"}, "tenant": {"acme"}}, "acme,search,sales,eng"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var ids []string
			for _, n := range tree.For(tt.principal, tt.claims) {
				ids = append(ids, n.ID)
			}
			if got := strings.Join(ids, ","); got != tt.want {
				t.Errorf("For(%q, %v) = %s, want %s", tt.principal, tt.claims, got, tt.want)
			}
		})
	}
	// For must not write into the tree: a claimed budget added for one
	// caller is not a member's for the next.
	tree.For("alice", map[string][]string{"groups": {"sales"}, "tenant": {"acme"}})
	var ids []string
	for _, n := range tree.For("alice", nil) {
		ids = append(ids, n.ID)
	}
	if got := strings.Join(ids, ","); got != "search,eng,acme" {
		t.Errorf("after a claimed call, For(alice) = %s", got)
	}
}

// TestForEveryone: a budget of everyone holds every caller, a key or a
// token, in a team or in none, after the caller's own budgets; one that
// is a team's ancestor is listed once, where the team puts it.
func TestForEveryone(t *testing.T) {
	t.Parallel()
	lim := usd("10")
	tree, err := New([]toolgatetype.BudgetDefinition{
		{ID: "acme", MonthlyLimitUSD: lim, Everyone: true},
		{ID: "search", Parent: "acme", DailyLimitUSD: lim, Members: []string{"alice"}, Claims: map[string]string{"groups": "search"}},
		{ID: "side", DailyLimitUSD: lim, Members: []string{"zoe"}},
		{ID: "holding", MonthlyLimitUSD: lim},
		{ID: "all-tools", Parent: "holding", MonthlyLimitUSD: lim, Everyone: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name      string
		principal string
		claims    map[string][]string
		want      string
	}{
		{"a key in no budget", "mallory", nil, "acme,all-tools,holding"},
		{"a token whose groups match no team", "carol", map[string][]string{"groups": {"ops"}}, "acme,all-tools,holding"},
		{"a member", "alice", nil, "search,acme,all-tools,holding"},
		{"a claimed member", "carol", map[string][]string{"groups": {"search"}}, "search,acme,all-tools,holding"},
		{"a member of a root", "zoe", nil, "side,acme,all-tools,holding"},
	} {
		var ids []string
		for _, n := range tree.For(tt.principal, tt.claims) {
			ids = append(ids, n.ID)
		}
		if got := strings.Join(ids, ","); got != tt.want {
			t.Errorf("%s: For(%q, %v) = %s, want %s", tt.name, tt.principal, tt.claims, got, tt.want)
		}
	}
}
