package rules

import (
	_ "embed"
	"encoding/json"
	"testing"
	"time"
)

// benchSet is the twenty rules of testdata/bench-rules.json, the kinds an
// organization writes (the gateway's QuoteCall benchmark reads them too),
// none of which matches benchSubject.
//
//go:embed testdata/bench-rules.json
var benchRulesJSON []byte

func benchSet(b *testing.B) *Set {
	b.Helper()
	var rs []struct{ Name, When, Effect string }
	if err := json.Unmarshal(benchRulesJSON, &rs); err != nil {
		b.Fatal(err)
	}
	out := make([]Rule, len(rs))
	for i, r := range rs {
		out[i] = Rule{Name: r.Name, When: r.When, Effect: Effect(r.Effect)}
	}
	s, err := Compile(out)
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
