package oauth

import (
	"encoding/json"
	"maps"
	"slices"
)

// The bounds of the claims a grant carries for budgets to match: a token
// is the identity provider's, but its size is the gateway's memory for as
// long as the token is cached, so a token stuffed with claims is cut to
// these rather than kept whole.
const (
	maxBudgetClaims      = 64
	maxBudgetClaimValues = 100
	maxBudgetClaimBytes  = 256
)

// envelopeClaims are about the token rather than its bearer (who issued
// it, for whom, when): no budget has a use for them.
var envelopeClaims = map[string]bool{"iss": true, "aud": true, "exp": true, "nbf": true, "iat": true, "jti": true}

// budgetClaims are the token's claims a budget's Claims can match: each
// string claim's value and the strings of each array claim (its other
// members skipped), except the envelope's. Past the bounds the rest is dropped: claims beyond
// the first 64 by name, values beyond an array's first 100 strings, and
// any name or value longer than 256 bytes. Nil when none.
func (c claims) budgetClaims() map[string][]string {
	var out map[string][]string
	for _, name := range slices.Sorted(maps.Keys(c)) {
		if len(out) == maxBudgetClaims {
			break
		}
		if name == "" || len(name) > maxBudgetClaimBytes || envelopeClaims[name] {
			continue
		}
		values := claimStrings(c[name])
		if len(values) == 0 {
			continue
		}
		if out == nil {
			out = map[string][]string{}
		}
		out[name] = values
	}
	return out
}

// claimStrings are the strings of a claim's value within the bounds: the
// value itself when it is a string, or the strings it holds when it is an
// array.
func claimStrings(raw json.RawMessage) []string {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		if one == "" || len(one) > maxBudgetClaimBytes {
			return nil
		}
		return []string{one}
	}
	var many []json.RawMessage
	if json.Unmarshal(raw, &many) != nil {
		return nil
	}
	var out []string
	for _, item := range many {
		if len(out) == maxBudgetClaimValues {
			break
		}
		var s string
		if json.Unmarshal(item, &s) == nil && s != "" && len(s) <= maxBudgetClaimBytes {
			out = append(out, s)
		}
	}
	return out
}
