package server

import (
	"crypto/sha256"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolgate/toolgate/toolgatetype"
)

// webhookSecret is a distinctive, valid secret: nothing may ever print it.
const webhookSecret = "whsec_" + "c2VjcmV0LW5vLWxvZy1tYXktZXZlci1ob2xkLTEyMzQ1Ng=="

func TestParseConfigApprovers(t *testing.T) {
	t.Parallel()
	doc := `{
	  "approvers": [
	    {"id": "pat", "keys": ["tg_approver_pat"], "principals": ["agent", "alice"]},
	    {"id": "sam", "keySha256": ["` + sha256Hex("tg_approver_sam") + `"], "principals": ["agent"]}
	  ],
	  "principals": [
	    {"id": "agent", "apiKeys": ["tg_agent"], "approvalMode": "approver"},
	    {"id": "alice", "apiKeys": ["tg_alice"], "approvalMode": "caller"},
	    {"id": "bob", "apiKeys": ["tg_bob"]}
	  ],
	  "approvals": {"webhookUrl": "https://hooks.example/toolgate", "webhookSecret": "` + webhookSecret + `",
	                "publicUrl": "https://gateway.example"}
	}`
	cfg, err := ParseConfig([]byte(doc))
	require.NoError(t, err)
	require.Len(t, cfg.Approvers, 2)
	assert.Equal(t, Approver{ID: "pat", Keys: []string{"tg_approver_pat"}, Principals: []string{"agent", "alice"}}, cfg.Approvers[0])
	assert.Equal(t, [][sha256.Size]byte{sha256.Sum256([]byte("tg_approver_sam"))}, cfg.Approvers[1].KeyDigests)
	modes := []toolgatetype.ApprovalMode{}
	for _, p := range cfg.Principals {
		modes = append(modes, p.ApprovalMode)
	}
	assert.Equal(t, []toolgatetype.ApprovalMode{toolgatetype.ApprovalModeApprover, toolgatetype.ApprovalModeCaller, ""}, modes)
	assert.Equal(t, Approvals{WebhookURL: "https://hooks.example/toolgate", WebhookSecret: webhookSecret, PublicURL: "https://gateway.example"}, cfg.Approvals)
}

// TestParseConfigApproverErrors: every mistake names where it is, and never
// quotes a key or the webhook secret.
func TestParseConfigApproverErrors(t *testing.T) {
	t.Parallel()
	agent := `{"id": "agent", "apiKeys": ["tg_agent"], "approvalMode": "approver"}`
	pat := `{"id": "pat", "keys": ["tg_pat"], "principals": ["agent"]}`
	doc := func(principals, approvers, extra string) string {
		return `{"principals": [` + principals + `], "approvers": [` + approvers + `]` + extra + `}`
	}
	tests := []struct {
		name string
		doc  string
		want string
	}{
		{"a caller key reused as an approver key",
			doc(agent+`, {"id": "alice", "apiKeys": ["tg_alice", "tg_shared"]}`, `{"id": "pat", "keys": ["tg_pat", "tg_shared"], "principals": ["agent"]}`, ""),
			`config: approvers[0].keys[1]: this key is also principals[1].apiKeys[1]: a key is a caller key or an approver key, never both`},
		{"approvers before principals",
			`{"approvers": [{"id": "pat", "keys": ["tg_shared"], "principals": ["agent"]}], "principals": [{"id": "agent", "apiKeys": ["tg_shared"], "approvalMode": "approver"}]}`,
			`config: approvers[0].keys[0]: this key is also principals[0].apiKeys[0]: a key is a caller key or an approver key, never both`},
		{"a caller key reused as an approver digest",
			doc(agent, `{"id": "pat", "keySha256": ["`+sha256Hex("tg_agent")+`"], "principals": ["agent"]}`, ""),
			`config: approvers[0].keySha256[0]: this key is also principals[0].apiKeys[0]: a key is a caller key or an approver key, never both`},
		{"a caller digest reused as an approver key",
			doc(`{"id": "agent", "apiKeySha256": ["`+sha256Hex("tg_shared")+`"], "approvalMode": "approver"}`, `{"id": "pat", "keys": ["tg_shared"], "principals": ["agent"]}`, ""),
			`config: approvers[0].keys[0]: this key is also principals[0].apiKeySha256[0]: a key is a caller key or an approver key, never both`},
		{"two approvers, one key",
			doc(agent, pat+`, {"id": "sam", "keys": ["tg_pat"], "principals": ["agent"]}`, ""),
			`config: approvers[1].keys[0]: this key already belongs to approver "pat"`},
		{"an approver twice", doc(agent, pat+`, `+pat, ""), `config: approvers[1].id: approver "pat" is given twice`},
		{"an approver without keys", doc(agent, `{"id": "pat", "principals": ["agent"]}`, ""),
			`config: approvers[0]: approver "pat" has no keys, keySha256 or claims, and no oauth.approverClaim can name it, so it could never sign in`},
		{"an approver without an id", doc(agent, `{"keys": ["k"]}`, ""), `config: approvers[0]: id is required`},
		{"an approver id with a NUL", doc(agent, `{"id": "p\u0000at", "keys": ["tg_pat"], "principals": ["agent"]}`, ""),
			`config: approvers[0].id: holds the control character U+0000`},
		{"an approver's principal with a control character", doc(agent, `{"id": "pat", "keys": ["tg_pat"], "principals": ["ag\u0001ent"]}`, ""),
			`config: approvers[0].principals[0]: holds the control character U+0001`},
		{"a principal id with an escape", doc(`{"id": "\u001bagent", "apiKeys": ["tg_agent"]}`, pat, ""),
			`config: principals[0].id: holds the control character U+001B`},
		{"an approver of an unknown principal", doc(agent, `{"id": "pat", "keys": ["tg_pat"], "principals": ["agent", "bob"]}`, ""),
			`config: approvers[0].principals[1]: no principal "bob" is configured`},
		{"unknown field in an approver", doc(agent, `{"id": "pat", "key": ["tg_pat"]}`, ""),
			`config: approvers[0]: unknown field "key": did you mean "keys"?`},
		{"a bad approver digest", doc(agent, `{"id": "pat", "keySha256": ["tg_pat_pasted_here"]}`, ""),
			`config: approvers[0].keySha256[0]: must be the SHA-256 of a key as 64 hex digits`},
		{"approver mode without an approver", doc(agent, `{"id": "pat", "keys": ["tg_pat"]}`, ""),
			`config: principals[0].approvalMode: principal "agent" is in approver mode, but no approver approves for it: none of its calls needing approval could ever run`},
		{"an unknown approval mode", doc(`{"id": "agent", "apiKeys": ["tg_agent"], "approvalMode": "person"}`, pat, ""),
			`config: principals[0].approvalMode: "person" is not an approval mode: use "caller" or "approver"`},

		{"a webhook without a secret", doc(agent, pat, `, "approvals": {"webhookUrl": "https://hooks.example"}`),
			`config: approvals.webhookSecret: is required with webhookUrl: every webhook is signed`},
		{"a secret without a webhook", doc(agent, pat, `, "approvals": {"webhookSecret": "`+webhookSecret+`"}`),
			`config: approvals.webhookSecret: is given without a webhookUrl to send to`},
		{"a secret that is not whsec_", doc(agent, pat, `, "approvals": {"webhookUrl": "https://hooks.example", "webhookSecret": "`+strings.TrimPrefix(webhookSecret, "whsec_")+`"}`),
			`config: approvals.webhookSecret: must be whsec_ followed by 24 to 64 random bytes in base64 (Standard Webhooks)`},
		{"a webhook URL that is not one", doc(agent, pat, `, "approvals": {"webhookUrl": "hooks.example", "webhookSecret": "`+webhookSecret+`"}`),
			`config: approvals.webhookUrl: must be an http or https URL`},
		{"a public URL that is not one", doc(agent, pat, `, "approvals": {"publicUrl": "gateway"}`),
			`config: approvals.publicUrl: must be an http or https URL without query or fragment, the address people reach this server at`},
		{"a public URL with a query", doc(agent, pat, `, "approvals": {"publicUrl": "https://gateway.example/?to=elsewhere"}`),
			`config: approvals.publicUrl: must be an http or https URL without query or fragment, the address people reach this server at`},
		{"unknown field in approvals", doc(agent, pat, `, "approvals": {"webhook": "https://hooks.example"}`),
			`config: approvals: unknown field "webhook": did you mean "webhookUrl"?`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseConfig([]byte(tt.doc))
			require.Error(t, err)
			var ce *ConfigError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, tt.want, err.Error())
			for _, secret := range []string{"tg_shared", "tg_pat", "tg_agent", strings.TrimPrefix(webhookSecret, "whsec_")} {
				assert.NotContains(t, err.Error(), secret)
			}
		})
	}
}

// TestREADMEApproverConfigExample keeps the README's approver-mode config
// example valid.
func TestREADMEApproverConfigExample(t *testing.T) {
	t.Parallel()
	cfg, err := ParseConfig(readmeConfigExample(t, "Approver mode: people approve, agents ask"))
	require.NoError(t, err)
	assert.Equal(t, toolgatetype.ApprovalModeApprover, cfg.Principals[0].ApprovalMode)
	assert.Equal(t, []string{"agent"}, cfg.Approvers[0].Principals)
	assert.NotEmpty(t, cfg.Approvals.WebhookSecret)
}
