package tooldocs_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/apikey"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/tooldocs"
	"github.com/toolgate/toolgate/toolgatehttp"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"
	"github.com/toolgate/toolgate/tools"
)

// docsKey is the API key of the documentation tests' caller.
const docsKey = "tg_test_docs_reader"

// builtInSlugs are the five built-in tools, in the registry table's order.
var builtInSlugs = []string{"earthquake-search", "exchange-rates", "public-holidays", "goal-data", "current-weather"}

// docsServer is a real HTTP server over a gateway with the built-in tools
// answered from the recordings, plus any extra tools.
type docsServer struct {
	*httptest.Server
	reg *registry.Registry
}

func newDocsServer(t *testing.T, extra ...*registry.Tool) *docsServer {
	t.Helper()
	tg := toolgatetest.New(t, &toolgatetest.Options{Tools: append(tools.All(), extra...)})
	gw, reg := tg.Gateway, tg.Registry
	keys := apikey.NewKeyStore()
	require.NoError(t, keys.AddKey("docs-reader", docsKey))
	srv := httptest.NewServer(toolgatehttp.NewHandler(gw, &toolgatehttp.Options{Authenticator: keys}))
	t.Cleanup(srv.Close)
	return &docsServer{Server: srv, reg: reg}
}

// The keys of the approver-mode documentation tests: agent is an agent
// whose calls pat, a person, approves.
const (
	agentKey = "tg_test_agent"
	patKey   = "tg_test_pat_approver"
)

// newApproverDocsServer is a real HTTP server over a gateway with the echo
// tool, whose principal agent is in approver mode, pat approving for it.
func newApproverDocsServer(t *testing.T) *docsServer {
	t.Helper()
	tg := toolgatetest.New(t, &toolgatetest.Options{Config: &toolgate.Config{Approvers: toolgatetype.StaticApprovers{
		Modes:     map[string]toolgatetype.ApprovalMode{"agent": toolgatetype.ApprovalModeApprover},
		Approvers: map[string][]string{"pat": {"agent"}},
	}}})
	keys := apikey.NewKeyStore()
	require.NoError(t, keys.AddKey("agent", agentKey))
	require.NoError(t, keys.AddApproverKey("pat", patKey))
	srv := httptest.NewServer(toolgatehttp.NewHandler(tg.Gateway, &toolgatehttp.Options{Authenticator: keys}))
	t.Cleanup(srv.Close)
	return &docsServer{Server: srv, reg: tg.Registry}
}

// docsReply is a response with its body read.
type docsReply struct {
	status int
	header http.Header
	body   []byte
}

func (r docsReply) json(t *testing.T) map[string]any {
	t.Helper()
	var v map[string]any
	require.NoError(t, json.Unmarshal(r.body, &v), "body: %s", r.body)
	return v
}

func (s *docsServer) get(t *testing.T, path string, headers ...string) docsReply {
	return s.send(t, http.MethodGet, path, "", headers...)
}

func (s *docsServer) send(t *testing.T, method, path, body string, headers ...string) docsReply {
	t.Helper()
	req, err := http.NewRequest(method, s.URL+path, strings.NewReader(body))
	require.NoError(t, err)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := s.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return docsReply{status: resp.StatusCode, header: resp.Header, body: b}
}

// docRoutes are the documentation routes of one tool and what they answer with.
func docRoutes(slug string) []struct{ path, contentType string } {
	return []struct{ path, contentType string }{
		{"/v1/registry/tools/" + slug + "/docs", "application/json"},
		{"/v1/registry/tools/" + slug + "/openapi.json", "application/json"},
		{"/v1/registry/tools/" + slug + "/llms.txt", "text/plain; charset=utf-8"},
		{"/v1/registry/tools/" + slug + "/versions", "application/json"},
		{"/tools/" + slug, "text/html; charset=utf-8"},
	}
}

func TestDocRoutesServeEveryBuiltInTool(t *testing.T) {
	t.Parallel()
	srv := newDocsServer(t)
	for _, slug := range builtInSlugs {
		for _, route := range docRoutes(slug) {
			t.Run(route.path, func(t *testing.T) {
				r := srv.get(t, route.path)
				require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
				assert.Equal(t, route.contentType, r.header.Get("Content-Type"))
				assert.NotEmpty(t, r.body)
			})
		}
	}
	r := srv.get(t, "/v1/registry/llms.txt")
	require.Equal(t, http.StatusOK, r.status)
	assert.Equal(t, "text/plain; charset=utf-8", r.header.Get("Content-Type"))
}

func TestDocRoutesAcceptToolID(t *testing.T) {
	t.Parallel()
	srv := newDocsServer(t)
	v, err := srv.reg.Lookup("exchange-rates")
	require.NoError(t, err)
	for _, route := range docRoutes(v.Tool.ID) {
		r := srv.get(t, route.path)
		require.Equal(t, http.StatusOK, r.status, "%s: %s", route.path, r.body)
	}
	rec := srv.get(t, "/v1/registry/tools/"+v.Tool.ID+"/docs").json(t)
	// Links name the tool by its slug, whichever way it was asked for.
	assert.Equal(t, srv.URL+"/v1/registry/tools/exchange-rates/openapi.json", rec["documentation"].(map[string]any)["openapi"])
}

func TestDocsRecordShape(t *testing.T) {
	t.Parallel()
	srv := newDocsServer(t)
	for _, slug := range builtInSlugs {
		t.Run(slug, func(t *testing.T) {
			rec := srv.get(t, "/v1/registry/tools/"+slug+"/docs").json(t)
			assert.Equal(t, "gateway.tool-docs/v1", rec["schemaVersion"])
			assert.Contains(t, rec, "direct")
			assert.Nil(t, rec["direct"])

			tool := rec["tool"].(map[string]any)
			assert.Equal(t, slug, tool["slug"])
			assert.Equal(t, "tool", tool["kind"])
			for _, field := range []string{"id", "name", "provider", "version", "trust", "risk", "policy", "usage", "pricing", "inputSchema", "outputSchema", "access", "updatedAt"} {
				assert.Contains(t, tool, field)
			}
			toolPath := srv.URL + "/v1/registry/tools/" + slug
			assert.Equal(t, map[string]any{
				"json":    toolPath + "/docs",
				"openapi": toolPath + "/openapi.json",
				"llms":    toolPath + "/llms.txt",
				"human":   srv.URL + "/tools/" + slug,
			}, tool["documentation"])

			docs := rec["documentation"].(map[string]any)
			assert.Equal(t, toolPath, docs["metadata"])
			assert.Equal(t, toolPath+"/docs", docs["json"])
			assert.Equal(t, toolPath+"/openapi.json", docs["openapi"])
			assert.Equal(t, toolPath+"/llms.txt", docs["llms"])
			for _, link := range docs {
				// Every link works, on the server that gave it out.
				r := srv.get(t, strings.TrimPrefix(link.(string), srv.URL))
				assert.Equal(t, http.StatusOK, r.status, "%s", link)
			}

			inv := rec["invocation"].(map[string]any)
			flow := inv["flow"].([]any)
			require.Len(t, flow, 3)
			assert.Contains(t, flow[0], "/v1/tools/"+slug+"/quote")
			assert.Contains(t, flow[1], "policy.approval")
			assert.Contains(t, flow[1], "controls.approved")
			assert.Contains(t, flow[2], "Idempotency-Key")
			assert.Contains(t, flow[2], "approval")

			quote := inv["quote"].(map[string]any)
			assert.Equal(t, "POST", quote["method"])
			assert.Equal(t, srv.URL+"/v1/tools/"+slug+"/quote", quote["url"])
			assert.Equal(t, "bearer", quote["authentication"].(map[string]any)["scheme"])
			assert.Equal(t, map[string]any{}, quote["requestBody"])
			assert.Equal(t, "#/$defs/QuoteResponse", quote["responseSchema"].(map[string]any)["$ref"])

			call := inv["call"].(map[string]any)
			assert.Equal(t, "POST", call["method"])
			assert.Equal(t, srv.URL+"/v1/tools/"+slug+"/call", call["url"])
			headers := call["requiredHeaders"].(map[string]any)
			for _, h := range []string{"Authorization", "Content-Type", "Idempotency-Key"} {
				assert.Contains(t, headers, h)
			}
			example := call["requestExample"].(map[string]any)
			assert.IsType(t, map[string]any{}, example["input"])
			assert.NotEmpty(t, example["quoteId"])
			if digest := tool["version"].(map[string]any)["manifestDigest"]; digest != nil {
				assert.Equal(t, digest, example["approval"].(map[string]any)["manifestDigest"])
			}
			result := call["responseExample"].(map[string]any)
			assert.Equal(t, map[string]any{"id": tool["id"], "slug": slug, "name": tool["name"]}, result["tool"])
			for s, defs := range map[string][]string{
				"requestSchema":  {"CallRequest", "ToolInput", "Approval"},
				"responseSchema": {"ExecutionResult", "ToolRef", "Cost", "ExecutionError"},
			} {
				schema := call[s].(map[string]any)
				assert.Equal(t, "https://json-schema.org/draft/2020-12/schema", schema["$schema"])
				for _, name := range defs {
					assert.Contains(t, schema["$defs"], name, s)
				}
			}
		})
	}
}

func TestDocsRecordOfToolWithoutOutputSchema(t *testing.T) {
	t.Parallel()
	srv := newDocsServer(t)
	rec := srv.get(t, "/v1/registry/tools/current-weather/docs").json(t)
	call := rec["invocation"].(map[string]any)["call"].(map[string]any)
	result := call["responseExample"].(map[string]any)
	// Every call of a tool without an output schema fails, and the example says so.
	assert.Equal(t, "failed", result["status"])
	assert.Nil(t, result["output"])
	assert.Equal(t, "output_invalid", result["error"].(map[string]any)["code"])
	assert.NotContains(t, call["requestExample"], "approval", "no digest to approve")
	assert.Contains(t, rec["invocation"].(map[string]any)["flow"].([]any)[1], "blocked")
}

func TestDocsLinksFollowTheMount(t *testing.T) {
	t.Parallel()
	tg := toolgatetest.New(t, &toolgatetest.Options{Tools: tools.All()})
	gw, reg := tg.Gateway, tg.Registry
	mux := http.NewServeMux()
	mux.Handle("/gateway/", http.StripPrefix("/gateway", tooldocs.NewHandler(gw, nil)))
	srv := &docsServer{Server: httptest.NewServer(mux), reg: reg}
	t.Cleanup(srv.Close)

	cases := []struct {
		name    string
		headers []string
		base    string
	}{
		{"mounted under a prefix", nil, srv.URL + "/gateway"},
		{"behind a TLS-terminating proxy", []string{"X-Forwarded-Proto", "https"}, "https://" + strings.TrimPrefix(srv.URL, "http://") + "/gateway"},
		{"behind a proxy that strips a prefix too", []string{"X-Forwarded-Prefix", "/edge/"}, srv.URL + "/edge/gateway"},
		{"malformed forwarded headers are ignored", []string{"X-Forwarded-Proto", "javascript", "X-Forwarded-Prefix", "//evil.example"}, srv.URL + "/gateway"},
		{"a prefix that climbs out is ignored", []string{"X-Forwarded-Prefix", "/a/../b"}, srv.URL + "/gateway"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := srv.get(t, "/gateway/v1/registry/tools/public-holidays/docs", c.headers...)
			require.Equal(t, http.StatusOK, r.status, "%s", r.body)
			assert.Contains(t, r.header.Values("Vary"), "X-Forwarded-Proto, X-Forwarded-Prefix")
			rec := r.json(t)
			assert.Equal(t, c.base+"/v1/registry/tools/public-holidays/openapi.json", rec["documentation"].(map[string]any)["openapi"])
			assert.Equal(t, c.base+"/v1/tools/public-holidays/call", rec["invocation"].(map[string]any)["call"].(map[string]any)["url"])
		})
	}
}

func TestToolVersions(t *testing.T) {
	t.Parallel()
	srv := newDocsServer(t)
	for _, slug := range builtInSlugs {
		body := srv.get(t, "/v1/registry/tools/"+slug+"/versions").json(t)
		v, err := srv.reg.Lookup(slug)
		require.NoError(t, err)
		assert.Equal(t, map[string]any{"id": v.Tool.ID, "slug": slug, "name": v.Tool.Name}, body["tool"])
		versions := body["versions"].([]any)
		require.Len(t, versions, 1, slug)
		one := versions[0].(map[string]any)
		assert.Equal(t, float64(1), one["number"])
		assert.Equal(t, true, one["current"])
		assert.Equal(t, v.Tool.UpdatedAt.Format(time.RFC3339), one["updatedAt"])
		if v.Digest == "" {
			assert.Nil(t, one["manifestDigest"], slug)
			assert.Equal(t, false, one["immutable"], slug)
		} else {
			assert.Equal(t, v.Digest, one["manifestDigest"], slug)
			assert.Equal(t, true, one["immutable"], slug)
		}
	}
}

func TestToolVersionsListsNewestFirst(t *testing.T) {
	t.Parallel()
	v1 := tools.GoalData()
	v1.Slug, v1.ID, v1.Name = "goal-data-copy", "", "Goal Data Copy"
	srv := newDocsServer(t, v1)
	v2 := tools.GoalData()
	v2.Slug, v2.ID, v2.Name, v2.Version = "goal-data-copy", "", "Goal Data Copy", 2
	v2.Description = "A second version."
	v2.UpdatedAt = v1.UpdatedAt.Add(24 * time.Hour)
	require.NoError(t, srv.reg.Register(v2))

	versions := srv.get(t, "/v1/registry/tools/goal-data-copy/versions").json(t)["versions"].([]any)
	require.Len(t, versions, 2)
	newest, oldest := versions[0].(map[string]any), versions[1].(map[string]any)
	assert.Equal(t, []any{float64(2), true}, []any{newest["number"], newest["current"]})
	assert.Equal(t, []any{float64(1), false}, []any{oldest["number"], oldest["current"]})
	assert.NotEqual(t, newest["manifestDigest"], oldest["manifestDigest"], "a new version is a new digest")
}

func TestDocRoutesUnknownTool(t *testing.T) {
	t.Parallel()
	srv := newDocsServer(t)
	for _, route := range docRoutes("no-such-tool") {
		t.Run(route.path, func(t *testing.T) {
			r := srv.get(t, route.path)
			require.Equal(t, http.StatusNotFound, r.status)
			assert.Equal(t, "application/json", r.header.Get("Content-Type"))
			errBody := r.json(t)["error"].(map[string]any)
			assert.Equal(t, "tool_not_found", errBody["code"])
			assert.Contains(t, errBody["message"], "no-such-tool")
		})
	}
}

func TestDocRoutesRefuseOtherMethods(t *testing.T) {
	t.Parallel()
	srv := newDocsServer(t)
	paths := []string{"/v1/registry/llms.txt"}
	for _, route := range docRoutes("earthquake-search") {
		paths = append(paths, route.path)
	}
	for _, path := range paths {
		for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
			r := srv.send(t, method, path, "{}", "Content-Type", "application/json", "Authorization", "Bearer "+docsKey)
			require.Equal(t, http.StatusMethodNotAllowed, r.status, "%s %s", method, path)
			assert.Equal(t, "method_not_allowed", r.json(t)["error"].(map[string]any)["code"])
			assert.Contains(t, r.header.Get("Allow"), "GET")
		}
	}
}

func TestDocRoutesAnswerHead(t *testing.T) {
	t.Parallel()
	srv := newDocsServer(t)
	for _, route := range docRoutes("goal-data") {
		r := srv.send(t, http.MethodHead, route.path, "")
		assert.Equal(t, http.StatusOK, r.status, route.path)
		assert.Equal(t, route.contentType, r.header.Get("Content-Type"))
	}
}

// TestDocsReflectTrustChanges checks that nothing is cached past an
// operator's trust change, which keeps the digest.
func TestDocsReflectTrustChanges(t *testing.T) {
	t.Parallel()
	srv := newDocsServer(t)
	before := srv.get(t, "/v1/registry/tools/goal-data/llms.txt")
	require.Contains(t, string(before.body), "Approval requirement: blocked")
	yes := true
	require.NoError(t, srv.reg.SetTrust("goal-data", registry.Trust{PaymentVerified: &yes}))
	after := srv.get(t, "/v1/registry/tools/goal-data/llms.txt")
	assert.NotContains(t, string(after.body), "Approval requirement: blocked")
	assert.Contains(t, string(after.body), "Callable: yes")
	rec := srv.get(t, "/v1/registry/tools/goal-data/docs").json(t)
	assert.Equal(t, true, rec["tool"].(map[string]any)["policy"].(map[string]any)["callable"])
}

// plainTool is a minimal valid tool definition for tests to dress up.
func plainTool(slug string) *registry.Tool {
	return &registry.Tool{
		Slug:        slug,
		Name:        "Plain Tool",
		Description: "A tool for tests.",
		Category:    "testing",
		Provider:    registry.Provider{Name: "Test Provider", TrustTier: "unverified"},
		Endpoint:    registry.Endpoint{Origin: "https://provider.example", Method: http.MethodGet, Path: "/"},
		Version:     1,
		Immutable:   true,
		Pricing:     registry.Pricing{Type: registry.PricingFree, Amount: decimal.Zero, Currency: "USD"},
		InputSchema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`),
		BuildRequest: func(ctx context.Context, origin string, _ json.RawMessage) (*http.Request, error) {
			return http.NewRequestWithContext(ctx, http.MethodGet, origin+"/", nil)
		},
		Normalize: func(registry.UpstreamResponse) (any, error) { return map[string]any{}, nil },
		UpdatedAt: time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC),
	}
}
