package rules

import (
	"fmt"
	"testing"
	"time"
)

// benchSet is twenty rules of the kinds an organization writes, none of
// which matches benchSubject.
func benchSet(b *testing.B) *Set {
	b.Helper()
	whens := []string{
		"tool.slug.startsWith('fs.') && input.path.startsWith('/prod/')",
		"call.totalUsd > 5.0",
		"'contractors' in principal.groups",
		"tool.slug == 'payments' && now.getHours() < 6",
		"has(input.minmagnitude) && input.minmagnitude > 9.0",
		"tool.risk == 'critical'",
		"principal.id == 'intern'",
		"tool.capabilities.spendsMoney == true",
		"'blocked' in tool.tags",
		"tool.provider == 'payments-inc'",
		"has(principal.claims.dept) && principal.claims.dept == 'sales'",
		"call.priceUsd > 100.0",
		"input.size() > 50",
		"tool.server == 'untrusted-mcp'",
		"principal.budgets.exists(b, b == 'frozen')",
		"has(input.starttime) && input.starttime < '2000-01-01'",
		"tool.name.contains('Delete')",
		"principal.approvalMode == 'nobody'",
		"tool.slug in ['ticket-reply', 'kb-search'] && 'support' in principal.groups",
		"call.feeUsd > 1.0 && !('finance' in principal.groups)",
	}
	rs := make([]Rule, len(whens))
	for i, w := range whens {
		rs[i] = Rule{Name: fmt.Sprintf("rule-%d", i), When: w, Effect: Deny}
	}
	s, err := Compile(rs)
	if err != nil {
		b.Fatal(err)
	}
	return s
}

func benchSubject(known bool) *Subject {
	return &Subject{
		Principal:  &Principal{ID: "bench", Groups: []string{}, Claims: map[string]any{}, Budgets: []string{}, ApprovalMode: "caller"},
		Tool:       &Tool{Slug: "earthquake-search", Name: "Earthquake search", Provider: "usgs", Risk: "medium", Tags: []string{"geo"}, Capabilities: map[string]any{"spendsMoney": false}},
		Input:      map[string]any{"starttime": "2024-09-25"},
		InputKnown: known,
		Cost:       Cost{PriceUSD: 0, FeeUSD: 0, TotalUSD: 0},
		Now:        time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC),
	}
}

// BenchmarkDecide decides twenty rules that do not match, as a call
// (input known) and as a quote (input unknown), over every rule and over
// those that may apply to the tool (Set.For).
func BenchmarkDecide(b *testing.B) {
	set := benchSet(b)
	narrowed := set.For(benchSubject(true).Tool)
	for _, v := range []struct {
		name  string
		set   *Set
		known bool
	}{
		{"call", set, true}, {"quote", set, false},
		{"call-narrowed", narrowed, true}, {"quote-narrowed", narrowed, false},
	} {
		b.Run(v.name, func(b *testing.B) {
			s := benchSubject(v.known)
			b.ReportAllocs()
			for b.Loop() {
				for _, m := range v.set.Decide(s).Matches {
					if !m.Pending {
						b.Fatal(m)
					}
				}
			}
		})
	}
}
