package rules

import "context"

// claimsKey is the context key of a caller's token claims.
type claimsKey struct{}

// WithClaims returns ctx carrying the claims of the caller's access token,
// which rules read as principal.claims (and principal.groups, from its
// "groups" claim). The doors set them for token callers; an embedder that
// verifies its own tokens sets them itself. A caller with an API key has
// none.
func WithClaims(ctx context.Context, claims map[string]any) context.Context {
	if len(claims) == 0 {
		return ctx
	}
	return context.WithValue(ctx, claimsKey{}, claims)
}

// ClaimsFrom returns the claims WithClaims put in ctx; nil when none.
func ClaimsFrom(ctx context.Context) map[string]any {
	c, _ := ctx.Value(claimsKey{}).(map[string]any)
	return c
}

// GroupsClaim is the claim principal.groups is read from.
const GroupsClaim = "groups"

// Groups are the strings of the claims' groups claim: a list, or a
// single string; none otherwise.
func Groups(claims map[string]any) []string {
	switch v := claims[GroupsClaim].(type) {
	case string:
		return []string{v}
	case []string:
		return v
	case []any:
		out := make([]string, 0, len(v))
		for _, g := range v {
			if s, ok := g.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return noGroups
}

// noGroups are the groups of a caller with none, shared: rules only read
// them.
var noGroups = []string{}
