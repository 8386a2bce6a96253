package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/testidp"
	"github.com/toolgate/toolgate/oauth"
	"github.com/toolgate/toolgate/rules"
	"github.com/toolgate/toolgate/toolgatetype"
	"github.com/toolgate/toolgate/tools/recorded"
)

// The organization's rules at the server's doors (contract section 29):
// the HTTP API, MCP over streamable HTTP and the tool docs, over a server
// built from its config, real sockets and a real identity provider.

const (
	rulesAliceKey = "tg_test_rules_alice_0123456789"
	rulesBobKey   = "tg_test_rules_bob_0123456789ab"
	rulesAudience = "https://toolgate.example/mcp"
)

// orgRules deny big earthquake searches, and hide exchange-rates from bob
// (an API key: by principal.id) and from the support group (a token: by
// its groups claim).
var orgRules = []rules.Rule{
	{Name: "no-big-searches", When: "tool.slug == 'earthquake-search' && input.limit > 50.0", Effect: rules.Deny,
		Message: "searches of more than 50 events are for the data team"},
	{Name: "rates-are-for-finance", When: "tool.slug == 'exchange-rates' && (principal.id == 'bob' || 'support' in principal.groups)",
		Effect: rules.Hide},
}

// rulesServer is a server with orgRules in force, its address, and the
// identity provider its tokens come from: sam, of the support group, and
// fin, of finance, may call.
type rulesServer struct {
	url string
	idp *testidp.Provider
	gw  *toolgate.Gateway
}

func newRulesServer(t *testing.T) *rulesServer {
	t.Helper()
	providers := httptest.NewServer(recorded.Handler())
	t.Cleanup(providers.Close)
	idp := testidp.Start(t, rulesAudience)
	idp.AddClient(testidp.Client{ID: "sam", Secret: "s", Scopes: []string{oauth.DefaultCallScope}, Claims: map[string]any{"groups": []any{"support"}}})
	idp.AddClient(testidp.Client{ID: "fin", Secret: "s", Scopes: []string{oauth.DefaultCallScope}, Claims: map[string]any{"groups": []any{"finance"}}})
	doc, err := json.Marshal(map[string]any{
		"oauth": map[string]any{"issuer": idp.Issuer, "audience": rulesAudience},
		"principals": []any{
			map[string]any{"id": "*"},
			map[string]any{"id": "alice", "apiKeys": []string{rulesAliceKey}},
			map[string]any{"id": "bob", "apiKeys": []string{rulesBobKey}},
		},
		"upstreams": map[string]string{"earthquake-search": providers.URL, "exchange-rates": providers.URL},
	})
	require.NoError(t, err)
	cfg, err := ParseConfig(doc)
	require.NoError(t, err)
	srv, err := New(t.Context(), cfg, &Options{Offline: true, Getenv: func(string) string { return "" }})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	require.NoError(t, srv.Gateway().SetRules(orgRules))
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	return &rulesServer{url: hs.URL, idp: idp, gw: srv.Gateway()}
}

// reply is an HTTP answer, read whole, with the request it answers.
type reply struct {
	req    *http.Request
	resp   *http.Response
	status int
	body   []byte
}

func (r reply) json(t *testing.T) map[string]any {
	t.Helper()
	var out map[string]any
	require.NoError(t, json.Unmarshal(r.body, &out), "%s", r.body)
	return out
}

// errorOf is the error body's error member.
func (r reply) errorOf(t *testing.T) map[string]any {
	t.Helper()
	e, ok := r.json(t)["error"].(map[string]any)
	require.True(t, ok, "an error body: %s", r.body)
	return e
}

// send makes a request with credential ("" for none) and body ("" for
// none), and reads the answer.
func (s *rulesServer) send(t *testing.T, method, path, credential, body string, header ...string) reply {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, s.url+path, rd)
	require.NoError(t, err)
	if credential != "" {
		req.Header.Set("Authorization", "Bearer "+credential)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(b))
	return reply{req: req, resp: resp, status: resp.StatusCode, body: b}
}

// quote quotes tool for credential with body ("" for none), expecting 201.
func (s *rulesServer) quote(t *testing.T, credential, tool, body string) reply {
	t.Helper()
	r := s.send(t, http.MethodPost, "/v1/tools/"+tool+"/quote", credential, body)
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	return r
}

// call quotes tool and calls it with input under the quote's digest.
func (s *rulesServer) call(t *testing.T, credential, tool, key, input string) reply {
	t.Helper()
	q := s.quote(t, credential, tool, "").json(t)["quote"].(map[string]any)
	body := fmt.Sprintf(`{"quoteId":%q,"input":%s,"approval":{"manifestDigest":%q}}`, q["id"], input, q["manifestDigest"])
	return s.send(t, http.MethodPost, "/v1/tools/"+tool+"/call", credential, body, "Idempotency-Key", key)
}

// listed are the slugs of GET /v1/registry/tools for credential.
func (s *rulesServer) listed(t *testing.T, credential string) []string {
	t.Helper()
	r := s.send(t, http.MethodGet, "/v1/registry/tools", credential, "")
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	list := r.json(t)
	var slugs []string
	for _, e := range list["tools"].([]any) {
		slugs = append(slugs, e.(map[string]any)["slug"].(string))
	}
	assert.EqualValues(t, len(slugs), list["total"], "the total counts what the caller sees")
	return slugs
}

// openAPI is the validator of tool's OpenAPI document as the server serves
// it.
func (s *rulesServer) openAPI(t *testing.T, tool string) validator.Validator {
	t.Helper()
	r := s.send(t, http.MethodGet, "/v1/registry/tools/"+tool+"/openapi.json", "", "")
	require.Equal(t, http.StatusOK, r.status)
	doc, err := libopenapi.NewDocument(r.body)
	require.NoError(t, err)
	v, errs := validator.NewValidator(doc, config.WithFormatAssertions())
	require.Empty(t, errs)
	ok, verrs := v.ValidateDocument()
	require.True(t, ok, "the OpenAPI document is valid: %v", verrs)
	return v
}

// requireDocumented checks that r is an answer tool's OpenAPI document
// describes.
func requireDocumented(t *testing.T, v validator.Validator, r reply) {
	t.Helper()
	ok, errs := v.ValidateHttpResponse(r.req, r.resp)
	var why []string
	for _, e := range errs {
		why = append(why, e.Message+": "+e.Reason)
		for _, f := range e.SchemaValidationErrors {
			why = append(why, "  "+f.Reason+" at "+f.FieldPath)
		}
	}
	require.True(t, ok, "%s %s answered %d %s, which the document does not describe:\n%s",
		r.req.Method, r.req.URL.Path, r.status, r.body, strings.Join(why, "\n"))
}

// TestRuleDeniesOverHTTP: a deny rule on an argument shows pending in a
// quote without input, decides the quote that carries the input, refuses
// the call with 403 rule_denied naming the rule, and refuses the approval
// request of that call too; every answer is one the OpenAPI document
// describes.
func TestRuleDeniesOverHTTP(t *testing.T) {
	t.Parallel()
	s := newRulesServer(t)
	v := s.openAPI(t, "earthquake-search")
	const big = `{"starttime":"2024-09-25","limit":80}`

	q := s.quote(t, rulesAliceKey, "earthquake-search", "")
	requireDocumented(t, v, q)
	policy := q.json(t)["policy"].(map[string]any)
	assert.Equal(t, true, policy["callable"], "the input is unknown: the rule is pending")
	assert.Equal(t, []any{map[string]any{"name": "no-big-searches", "effect": "deny",
		"message": "searches of more than 50 events are for the data team", "pending": true}}, policy["rules"])

	q = s.quote(t, rulesAliceKey, "earthquake-search", `{"input":`+big+`}`)
	requireDocumented(t, v, q)
	policy = q.json(t)["policy"].(map[string]any)
	assert.Equal(t, false, policy["callable"])
	assert.Contains(t, policy["reasons"], "Rule no-big-searches: searches of more than 50 events are for the data team")
	assert.Equal(t, false, policy["rules"].([]any)[0].(map[string]any)["pending"])

	q = s.quote(t, rulesAliceKey, "earthquake-search", `{"input":{"starttime":"2024-09-25","limit":5}}`)
	requireDocumented(t, v, q)
	policy = q.json(t)["policy"].(map[string]any)
	assert.Equal(t, true, policy["callable"], "a small search matches no rule")
	assert.NotContains(t, policy, "rules")

	for _, body := range []string{"{}", `{"input":null}`} {
		assert.Equal(t, true, s.quote(t, rulesAliceKey, "earthquake-search", body).json(t)["policy"].(map[string]any)["rules"].([]any)[0].(map[string]any)["pending"], body)
	}
	bad := s.send(t, http.MethodPost, "/v1/tools/earthquake-search/quote", rulesAliceKey, `{"inputs":{}}`)
	require.Equal(t, http.StatusBadRequest, bad.status, "an unknown member, as every body the API reads: %s", bad.body)
	assert.Contains(t, bad.errorOf(t)["message"], `unknown field "inputs"`)

	denied := s.call(t, rulesAliceKey, "earthquake-search", "big-1", big)
	require.Equal(t, http.StatusForbidden, denied.status, "%s", denied.body)
	requireDocumented(t, v, denied)
	e := denied.errorOf(t)
	assert.Equal(t, "rule_denied", e["code"])
	assert.Equal(t, "Rule no-big-searches: searches of more than 50 events are for the data team", e["message"])
	assert.Equal(t, map[string]any{"name": "no-big-searches", "message": "searches of more than 50 events are for the data team"}, e["rule"])

	// Nothing was kept under the key: it serves the call that may run.
	ok := s.call(t, rulesAliceKey, "earthquake-search", "big-1", `{"starttime":"2024-09-25","limit":2}`)
	require.Equal(t, http.StatusOK, ok.status, "%s", ok.body)
	requireDocumented(t, v, ok)
	assert.Equal(t, "completed", ok.json(t)["status"])

	qid := s.quote(t, rulesAliceKey, "earthquake-search", "").json(t)["quote"].(map[string]any)["id"]
	asked := s.send(t, http.MethodPost, "/v1/approval-requests", rulesAliceKey, fmt.Sprintf(`{"quoteId":%q,"input":%s}`, qid, big))
	require.Equal(t, http.StatusForbidden, asked.status, "%s", asked.body)
	assert.Equal(t, "rule_denied", asked.errorOf(t)["code"])
	assert.Equal(t, "no-big-searches", asked.errorOf(t)["rule"].(map[string]any)["name"])
}

// TestRuleHidesOverHTTP: a hide rule takes the tool out of the registry
// listing and entry of the callers it matches, by their key's principal or
// their token's groups, and answers their quote, call and approval request
// of it as for a tool that does not exist; anyone else sees and calls it.
func TestRuleHidesOverHTTP(t *testing.T) {
	t.Parallel()
	s := newRulesServer(t)
	v := s.openAPI(t, "exchange-rates")
	sam, fin := s.idp.Token(t, "sam"), s.idp.Token(t, "fin")

	for _, c := range []struct {
		who        string
		credential string
		sees       bool
	}{
		{"nobody", "", true},
		{"alice", rulesAliceKey, true},
		{"fin", fin, true},
		{"bob", rulesBobKey, false},
		{"sam", sam, false},
	} {
		listed := s.listed(t, c.credential)
		assert.Contains(t, listed, "earthquake-search", c.who)
		entry := s.send(t, http.MethodGet, "/v1/registry/tools/exchange-rates", c.credential, "")
		if c.sees {
			assert.Contains(t, listed, "exchange-rates", c.who)
			assert.Equal(t, http.StatusOK, entry.status, "%s: %s", c.who, entry.body)
			continue
		}
		assert.NotContains(t, listed, "exchange-rates", c.who)
		require.Equal(t, http.StatusNotFound, entry.status, "%s: %s", c.who, entry.body)

		// As for a tool that does not exist, word for word.
		for _, path := range []string{"/quote", "/call"} {
			hidden := s.send(t, http.MethodPost, "/v1/tools/exchange-rates"+path, c.credential, "{}", "Idempotency-Key", "k")
			absent := s.send(t, http.MethodPost, "/v1/tools/no-such-tool"+path, c.credential, "{}", "Idempotency-Key", "k")
			if path == "/call" {
				body := `{"quoteId":"6a1e3c2b-4d5f-4a7b-8c9d-0e1f2a3b4c5d","input":{"base":"USD"}}`
				hidden = s.send(t, http.MethodPost, "/v1/tools/exchange-rates"+path, c.credential, body, "Idempotency-Key", "k")
				absent = s.send(t, http.MethodPost, "/v1/tools/no-such-tool"+path, c.credential, body, "Idempotency-Key", "k")
			}
			require.Equal(t, http.StatusNotFound, hidden.status, "%s %s: %s", c.who, path, hidden.body)
			requireDocumented(t, v, hidden)
			assert.Equal(t, "tool_not_found", hidden.errorOf(t)["code"])
			assert.Equal(t, strings.ReplaceAll(string(absent.body), "no-such-tool", "exchange-rates"), string(hidden.body), "%s %s", c.who, path)
		}
	}

	// bob's approval request under a quote he got before the rule came in
	// force is not found either.
	require.NoError(t, s.gw.SetRules(orgRules[:1]))
	qid := s.quote(t, rulesBobKey, "exchange-rates", "").json(t)["quote"].(map[string]any)["id"]
	require.NoError(t, s.gw.SetRules(orgRules))
	asked := s.send(t, http.MethodPost, "/v1/approval-requests", rulesBobKey, fmt.Sprintf(`{"quoteId":%q,"input":{"base":"USD"}}`, qid))
	require.Equal(t, http.StatusNotFound, asked.status, "%s", asked.body)
	assert.Equal(t, "tool_not_found", asked.errorOf(t)["code"])

	ok := s.call(t, rulesAliceKey, "exchange-rates", "rates-1", `{"base":"USD","quotes":"EUR,GBP"}`)
	require.Equal(t, http.StatusOK, ok.status, "%s", ok.body)
	requireDocumented(t, v, ok)
	ok = s.call(t, fin, "exchange-rates", "rates-2", `{"base":"USD","quotes":"EUR,GBP"}`)
	require.Equal(t, http.StatusOK, ok.status, "a token of another group calls it: %s", ok.body)

	// A credential not accepted is refused, as on every route.
	bad := s.send(t, http.MethodGet, "/v1/registry/tools", "tg_test_rules_nobody_01234567", "")
	assert.Equal(t, http.StatusUnauthorized, bad.status, "%s", bad.body)
}

// TestRulesOverMCP: at both protocol revisions the server serves, a
// denied call is a tool error whose text is the HTTP API's error body,
// and a hidden tool is not listed and is the SDK's unknown tool to call,
// for a key's principal and a token's group alike.
func TestRulesOverMCP(t *testing.T) {
	t.Parallel()
	s := newRulesServer(t)
	denied := s.call(t, rulesAliceKey, "earthquake-search", "mcp-http-1", `{"starttime":"2024-09-25","limit":80}`)
	require.Equal(t, http.StatusForbidden, denied.status)
	sam, fin := s.idp.Token(t, "sam"), s.idp.Token(t, "fin")
	for _, p := range []struct{ name, version string }{{"2026-07-28", ""}, {"2025-11-25", "2025-11-25"}} {
		version := p.version
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			alice := s.mcp(t, rulesAliceKey, version)
			res := mcpCall(t, alice, "earthquake-search", `{"starttime":"2024-09-25","limit":80}`, s.digest(t, "earthquake-search"))
			require.True(t, res.IsError)
			text := res.Content[0].(*mcp.TextContent).Text
			assert.JSONEq(t, string(denied.body), text, "the HTTP API's body")
			meta, err := json.Marshal(res.Meta["toolgate/error"])
			require.NoError(t, err)
			assert.JSONEq(t, text, string(meta))
			assert.Contains(t, mcpList(t, alice), "exchange-rates")
			res = mcpCall(t, alice, "exchange-rates", `{"base":"USD","quotes":"EUR,GBP"}`, s.digest(t, "exchange-rates"))
			require.False(t, res.IsError, "%v", res.Content)

			for who, credential := range map[string]string{"bob": rulesBobKey, "sam": sam, "fin": fin} {
				cs := s.mcp(t, credential, version)
				listed := mcpList(t, cs)
				assert.Contains(t, listed, "earthquake-search", who)
				if who == "fin" {
					assert.Contains(t, listed, "exchange-rates", who)
					continue
				}
				assert.NotContains(t, listed, "exchange-rates", who)
				_, absent := mcpCallErr(cs, "no-such-tool", `{"base":"USD"}`)
				require.Error(t, absent)
				for _, args := range []string{`{"base":"USD","quotes":"EUR,GBP"}`, `{"base":7}`} {
					_, hidden := mcpCallErr(cs, "exchange-rates", args)
					require.Error(t, hidden, "%s %s", who, args)
					assert.Equal(t, strings.ReplaceAll(absent.Error(), "no-such-tool", "exchange-rates"), hidden.Error(), "%s %s", who, args)
				}
			}
		})
	}
}

// mcp connects to the server's MCP endpoint with credential at version
// ("" for the SDK's newest).
func (s *rulesServer) mcp(t *testing.T, credential, version string) *mcp.ClientSession {
	t.Helper()
	transport := &mcp.StreamableClientTransport{Endpoint: s.url + "/mcp", HTTPClient: &http.Client{Transport: bearerAuth{credential}}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "rules-agent", Version: "1"}, nil).
		Connect(context.Background(), transport, &mcp.ClientSessionOptions{ProtocolVersion: version})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	if version != "" {
		require.Equal(t, version, cs.InitializeResult().ProtocolVersion)
	}
	return cs
}

// digest is tool's manifest digest, which its caller approves.
func (s *rulesServer) digest(t *testing.T, tool string) string {
	t.Helper()
	return s.quote(t, rulesAliceKey, tool, "").json(t)["quote"].(map[string]any)["manifestDigest"].(string)
}

type bearerAuth struct{ credential string }

func (b bearerAuth) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.credential)
	return http.DefaultTransport.RoundTrip(r)
}

func mcpCallErr(cs *mcp.ClientSession, tool, args string) (*mcp.CallToolResult, error) {
	return cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: json.RawMessage(args)})
}

func mcpCall(t *testing.T, cs *mcp.ClientSession, tool, args, digest string) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: json.RawMessage(args),
		Meta: mcp.Meta{"toolgate/approval": digest}})
	require.NoError(t, err)
	return res
}

func mcpList(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	var names []string
	for tool, err := range cs.Tools(context.Background(), nil) {
		require.NoError(t, err)
		names = append(names, tool.Name)
	}
	return names
}

// TestToolDocsNameTheRules: the documentation record, the OpenAPI
// document, llms.txt and the HTML page of a tool a rule may decide name
// the rule; a tool no rule decides has no rules in any of them.
func TestToolDocsNameTheRules(t *testing.T) {
	t.Parallel()
	s := newRulesServer(t)
	get := func(path string) string {
		r := s.send(t, http.MethodGet, path, "", "")
		require.Equal(t, http.StatusOK, r.status, "%s: %s", path, r.body)
		return string(r.body)
	}
	want := []any{map[string]any{"name": "no-big-searches", "effect": "deny", "mode": "enforce",
		"message": "searches of more than 50 events are for the data team"}}

	var record struct {
		Tool toolgatetype.RegistryEntry `json:"tool"`
	}
	require.NoError(t, json.Unmarshal([]byte(get("/v1/registry/tools/earthquake-search/docs")), &record))
	assert.Equal(t, []toolgatetype.ToolRule{{Name: "no-big-searches", Effect: "deny", Mode: "enforce",
		Message: "searches of more than 50 events are for the data team"}}, record.Tool.Rules)

	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(get("/v1/registry/tools/earthquake-search/openapi.json")), &doc))
	op := doc["paths"].(map[string]any)["/v1/tools/earthquake-search/call"].(map[string]any)["post"].(map[string]any)
	assert.Equal(t, want, op["x-toolgate-rules"])
	assert.Contains(t, doc["info"].(map[string]any)["description"], "no-big-searches")

	assert.Contains(t, get("/v1/registry/tools/earthquake-search/llms.txt"),
		"- `no-big-searches`: deny (enforce): searches of more than 50 events are for the data team\n")
	page := get("/tools/earthquake-search")
	assert.Contains(t, page, "<h2>Rules</h2>")
	assert.Contains(t, page, "<td><code>no-big-searches</code></td><td>deny</td><td>enforce</td><td>searches of more than 50 events are for the data team</td>")

	// The hide rule is the rates' to name; the holidays have none.
	assert.Contains(t, get("/v1/registry/tools/exchange-rates/llms.txt"), "`rates-are-for-finance`: hide (enforce)")
	for _, path := range []string{"/v1/registry/tools/public-holidays/llms.txt", "/tools/public-holidays", "/v1/registry/tools/public-holidays/openapi.json"} {
		body := get(path)
		assert.NotContains(t, body, "no-big-searches", path)
		assert.NotContains(t, body, "Rules", path)
		assert.NotContains(t, body, "x-toolgate-rules", path)
	}
}
