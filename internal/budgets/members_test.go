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
