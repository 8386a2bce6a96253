package oauth

import (
	"encoding/json"
	"slices"

	"github.com/toolgate/toolgate/apikey"
	"github.com/toolgate/toolgate/toolgatetype"
)

// BudgetClaims returns the (claim name, values) pairs that defs' Claims
// name, for Config.BudgetClaims: an embedder passes the budgets it gives
// the gateway, so that tokens carry exactly what those budgets match.
func BudgetClaims(defs []toolgatetype.BudgetDefinition) map[string][]string {
	var out map[string][]string
	for _, d := range defs {
		for name, value := range d.Claims {
			if out == nil {
				out = map[string][]string{}
			}
			if !slices.Contains(out[name], value) {
				out[name] = append(out[name], value)
			}
		}
	}
	return out
}

// budgetClaimSet is Config.BudgetClaims as the verifier looks them up:
// claim name to the values wanted of it. Envelope claims and empty pairs
// are left out, as no token's could be matched.
type budgetClaimSet map[string]map[string]bool

func newBudgetClaimSet(pairs map[string][]string) budgetClaimSet {
	var set budgetClaimSet
	for name, values := range pairs {
		if name == "" || apikey.IsEnvelopeClaim(name) {
			continue
		}
		for _, v := range values {
			if v == "" {
				continue
			}
			if set == nil {
				set = budgetClaimSet{}
			}
			if set[name] == nil {
				set[name] = map[string]bool{}
			}
			set[name][v] = true
		}
	}
	return set
}

// budgetClaims are the pairs of want that the token's claims hold: a
// string claim equal to a wanted value, or an array claim holding one
// among its strings. Only what some budget matches is kept, whatever the
// token's size, so a token cached for its lifetime costs memory in
// proportion to the budgets rather than to its claims; and nothing a
// budget matches is ever dropped. Each claim's values come sorted. Nil
// when none.
func (c claims) budgetClaims(want budgetClaimSet) map[string][]string {
	var out map[string][]string
	for name, values := range want {
		raw, ok := c[name]
		if !ok {
			continue
		}
		var held []string
		var one string
		if json.Unmarshal(raw, &one) == nil {
			if values[one] {
				held = []string{one}
			}
		} else {
			var many []json.RawMessage
			if json.Unmarshal(raw, &many) != nil {
				continue
			}
			seen := map[string]bool{}
			for _, item := range many {
				var s string
				if json.Unmarshal(item, &s) == nil && values[s] && !seen[s] {
					seen[s] = true
					held = append(held, s)
				}
			}
			slices.Sort(held)
		}
		if len(held) == 0 {
			continue
		}
		if out == nil {
			out = map[string][]string{}
		}
		out[name] = held
	}
	return out
}
