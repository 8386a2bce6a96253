package toolgate

import (
	"context"

	"github.com/toolgate/toolgate/toolgatetype"
)

// Budgets a call counts in come from its principal (BudgetDefinition's
// Members) and, for callers signed in with an access token, from the
// token's claims (its Claims), which ride in the request's context.

// claimsKey is the context key of a caller's token claims.
type claimsKey struct{}

// WithTokenClaims returns ctx carrying the claims of the access token the
// caller signed in with: each claim's string value, or the strings of an
// array claim. Quote, Call and Prepare match them against the budgets'
// Claims, so a person from the identity provider counts in their team's
// budget with no change to the configuration. The doors (the HTTP API,
// the MCP server) set them for token callers; an embedder that verifies
// its own tokens sets them itself. API-key callers carry none.
func WithTokenClaims(ctx context.Context, claims map[string][]string) context.Context {
	if len(claims) == 0 {
		return ctx
	}
	return context.WithValue(ctx, claimsKey{}, claims)
}

// tokenClaims are the claims WithTokenClaims put in ctx; nil when none.
func tokenClaims(ctx context.Context) map[string][]string {
	c, _ := ctx.Value(claimsKey{}).(map[string][]string)
	return c
}

// Budgets returns the state of every configured budget, in configuration
// order: each window that has a limit, what is used in it and when it
// resets.
func (g *Gateway) Budgets(ctx context.Context) ([]toolgatetype.Budget, error) {
	panic("TODO(issue 42): core")
}

// BudgetsFor returns the budgets an approver may see: those whose
// Approvers name them, and their descendants, in configuration order.
func (g *Gateway) BudgetsFor(ctx context.Context, approver string) ([]toolgatetype.Budget, error) {
	panic("TODO(issue 42): core")
}

// BudgetSpend sums what a budget's calls were charged, of every member
// and of its descendants' members, over [f.Since, f.Until) counted in the
// budget's days, grouped by day (in the budget's time zone), principal or
// tool. An approver the budget does not name (directly or through an
// ancestor) gets not_found, as does an unknown budget.
func (g *Gateway) BudgetSpend(ctx context.Context, approver, budget string, f toolgatetype.SpendFilter) (*toolgatetype.SpendSummary, error) {
	panic("TODO(issue 42): core")
}
