package oauth

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestApproverForIDTokenClaims: the approval pages' sign-in maps an ID
// token's claims to an approver as access tokens are mapped: the approver
// claim first, then the first claim approver whose claims all match.
func TestApproverForIDTokenClaims(t *testing.T) {
	t.Parallel()
	v, err := New(&Config{Issuer: "https://idp.example", Audience: "https://toolgate.example/mcp", ApproverClaim: "approver",
		Approvers: func(id string) bool { return id == "pat" },
		ClaimApprovers: []ClaimApprover{
			{ID: "leads", Claims: map[string]string{"groups": "leads"}},
			{ID: "sre", Claims: map[string]string{"groups": "sre", "site": "berlin"}},
		}})
	assert.NoError(t, err)
	cases := []struct {
		claims map[string]any
		want   string
	}{
		{map[string]any{"groups": []any{"staff", "leads"}}, "leads"},
		{map[string]any{"groups": "leads"}, "leads"},
		{map[string]any{"approver": "pat", "groups": "leads"}, "pat"},
		{map[string]any{"approver": "mallory", "groups": "leads"}, "leads"},
		{map[string]any{"groups": []string{"sre"}, "site": "berlin"}, "sre"},
		{map[string]any{"groups": []string{"sre"}}, ""},
		{map[string]any{"groups": "Leads"}, ""},
		{map[string]any{}, ""},
	}
	for _, c := range cases {
		got, ok := v.ApproverFor(c.claims)
		assert.Equal(t, c.want, got, "%v", c.claims)
		assert.Equal(t, c.want != "", ok)
	}
	v.SetClaimApprovers(nil)
	_, ok := v.ApproverFor(map[string]any{"groups": "leads"})
	assert.False(t, ok, "claim approvers replaced on reload")
}
