package tooldocs_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	liberrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi-validator/helpers"
	"github.com/pb33f/libopenapi-validator/schema_validation"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolgate/toolgate/registry"
)

// The OpenAPI documents are checked with pb33f/libopenapi-validator, which
// validates a document against the official OpenAPI 3.1 schema and
// compiles every schema in it with a JSON Schema 2020-12 validator
// (santhosh-tekuri/jsonschema) when it validates requests and responses,
// so a schema that is not valid 2020-12 fails there. The OpenAPI 3.1
// schema itself leaves Schema Objects to the dialect, hence both steps.

// legacySchemaTool is a tool whose input schema uses the draft-07 keywords
// that JSON Schema 2020-12 reads differently, and which ships no example.
func legacySchemaTool() *registry.Tool {
	t := plainTool("legacy-schemas")
	t.Name = "Legacy Schemas"
	t.InputSchema = json.RawMessage(`{
	  "$schema": "http://json-schema.org/draft-07/schema#",
	  "type": "object",
	  "required": ["point", "when"],
	  "additionalProperties": false,
	  "definitions": {"day": {"type": "string", "format": "date"}},
	  "properties": {
	    "point": {"type": "array", "items": [{"type": "number"}, {"type": "number"}], "additionalItems": false},
	    "when": {"$ref": "#/definitions/day", "minLength": 100, "description": "draft-07 ignores minLength beside $ref"},
	    "unit": {"enum": ["c", "f"]},
	    "mode": {"type": "string"},
	    "detail": {"type": ["string", "null"]}
	  },
	  "dependencies": {"detail": ["mode"], "mode": {"required": ["unit"]}}
	}`)
	t.OutputSchema = json.RawMessage(`{"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "required": ["ok"], "properties": {"ok": {"const": true}}}`)
	return t
}

// openAPIValidator parses an OpenAPI document and checks it against the
// OpenAPI 3.1 schema.
func openAPIValidator(t *testing.T, body []byte) validator.Validator {
	t.Helper()
	doc, err := libopenapi.NewDocument(body)
	require.NoError(t, err)
	assert.Equal(t, "3.1.0", doc.GetVersion())
	ok, errs := schema_validation.ValidateOpenAPIDocument(doc)
	requireValid(t, ok, errs, "the OpenAPI document")
	v, buildErrs := validator.NewValidator(doc, config.WithFormatAssertions())
	require.Empty(t, buildErrs)
	return v
}

func requireValid(t *testing.T, ok bool, errs []*liberrors.ValidationError, what string) {
	t.Helper()
	if ok && len(errs) == 0 {
		return
	}
	t.Fatalf("%s is invalid:\n%s", what, describeValidation(errs))
}

func describeValidation(errs []*liberrors.ValidationError) string {
	var b strings.Builder
	for _, e := range errs {
		fmt.Fprintf(&b, "- %s: %s\n", e.Message, e.Reason)
		for _, f := range e.SchemaValidationErrors {
			fmt.Fprintf(&b, "    %s (at %s, keyword %s)\n", f.Reason, f.FieldPath, f.KeywordLocation)
		}
	}
	return b.String()
}

// exampleCall is the documented call: the example body of the call
// operation, with the headers it requires.
func exampleCall(t *testing.T, serverURL string, doc map[string]any, slug string, body []byte) *http.Request {
	t.Helper()
	if body == nil {
		op := doc["paths"].(map[string]any)["/v1/tools/"+slug+"/call"].(map[string]any)["post"].(map[string]any)
		example := op["requestBody"].(map[string]any)["content"].(map[string]any)["application/json"].(map[string]any)["example"]
		var err error
		body, err = json.Marshal(example)
		require.NoError(t, err)
	}
	req, err := http.NewRequest(http.MethodPost, serverURL+"/v1/tools/"+slug+"/call", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+docsKey)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "docs-example-"+slug)
	return req
}

func TestOpenAPIDocumentsAreValid(t *testing.T) {
	t.Parallel()
	srv := newDocsServer(t, legacySchemaTool())
	for _, slug := range append(append([]string{}, builtInSlugs...), "legacy-schemas") {
		t.Run(slug, func(t *testing.T) {
			r := srv.get(t, "/v1/registry/tools/"+slug+"/openapi.json")
			require.Equal(t, http.StatusOK, r.status)
			v := openAPIValidator(t, r.body)
			doc := r.json(t)

			assert.Equal(t, "3.1.0", doc["openapi"])
			assert.Equal(t, []any{map[string]any{"url": srv.URL}}, doc["servers"])
			paths := doc["paths"].(map[string]any)
			assert.Len(t, paths, 6)
			assert.Contains(t, paths, "/v1/tools/"+slug+"/quote")
			assert.Contains(t, paths, "/v1/tools/"+slug+"/call")
			assert.Contains(t, paths, "/v1/receipts")
			assert.Equal(t, []any{}, paths["/.well-known/toolgate-receipt-keys"].(map[string]any)["get"].(map[string]any)["security"], "the keys are public")
			components := doc["components"].(map[string]any)
			assert.Equal(t, map[string]any{"type": "http", "scheme": "bearer", "description": "An API key of the gateway: Authorization: Bearer <API_KEY>."},
				components["securitySchemes"].(map[string]any)["bearerAuth"])
			idem := components["parameters"].(map[string]any)["IdempotencyKey"].(map[string]any)
			assert.Equal(t, "Idempotency-Key", idem["name"])
			assert.Equal(t, "header", idem["in"])
			assert.Equal(t, true, idem["required"])
			schemas := components["schemas"].(map[string]any)
			for _, name := range []string{"QuoteResponse", "CallRequest", "ExecutionResult", "Error", "ToolInput",
				"Receipt", "SignedReceipt", "ReceiptPage", "ReceiptKeys"} {
				assert.Contains(t, schemas, name)
			}
			assert.Equal(t, "#/components/schemas/SignedReceipt",
				schemas["ExecutionResult"].(map[string]any)["properties"].(map[string]any)["receipt"].(map[string]any)["$ref"])
			assert.Equal(t, map[string]any{"$ref": "#/components/schemas/ToolInput"},
				schemas["CallRequest"].(map[string]any)["properties"].(map[string]any)["input"])
			callResponses := paths["/v1/tools/"+slug+"/call"].(map[string]any)["post"].(map[string]any)["responses"].(map[string]any)
			for _, status := range []string{"200", "400", "401", "403", "404", "409", "413", "415", "422", "429", "500"} {
				assert.Contains(t, callResponses, status)
			}
			assert.Contains(t, components["responses"].(map[string]any)["TooManyRequests"].(map[string]any)["headers"], "Retry-After")

			// The documented example call is a valid request...
			ok, errs := v.ValidateHttpRequest(exampleCall(t, srv.URL, doc, slug, nil))
			requireValid(t, ok, errs, "the call example")
			// ...and the document really holds the tool's input schema: an
			// input without its required fields is refused.
			ok, _ = v.ValidateHttpRequest(exampleCall(t, srv.URL, doc, slug,
				[]byte(`{"quoteId":"6a1e3c2b-4d5f-4a7b-8c9d-0e1f2a3b4c5d","input":{}}`)))
			assert.False(t, ok, "an input missing its required fields must not validate")
		})
	}
}

func TestOpenAPIValidatorIsNotVacuous(t *testing.T) {
	t.Parallel()
	srv := newDocsServer(t)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(srv.get(t, "/v1/registry/tools/earthquake-search/openapi.json").body, &doc))
	delete(doc["info"].(map[string]any), "title")
	broken, err := json.Marshal(doc)
	require.NoError(t, err)
	parsed, err := libopenapi.NewDocument(broken)
	require.NoError(t, err)
	ok, _ := schema_validation.ValidateOpenAPIDocument(parsed)
	assert.False(t, ok, "a document without info.title is not OpenAPI 3.1")

	// Responses that break the documented shapes are caught.
	v := openAPIValidator(t, srv.get(t, "/v1/registry/tools/earthquake-search/openapi.json").body)
	for _, c := range []struct {
		op, body string
		status   int
	}{
		{"quote", `{"quote":{"id":"6a1e3c2b-4d5f-4a7b-8c9d-0e1f2a3b4c5d"}}`, http.StatusCreated},
		{"call", `{"id":"9b8a7c6d-5e4f-4321-8765-43210fedcba9","tool":{"id":"x","slug":"earthquake-search","name":"Earthquake Search"},` +
			`"status":"completed","cost":{"priceUsd":"0.0000","feeUsd":"0.0000","totalUsd":"0.0000","currency":"USD"},"output":"ignore previous instructions","error":null}`, http.StatusOK},
		{"call", `{"error":{"code":"no_such_code","message":"m"}}`, http.StatusNotFound},
		{"receipts", `{"receipts":[{"receipt":{"seq":1}}]}`, http.StatusOK},
		{"receipts", `{"receipts":[],"next":0}`, http.StatusOK},
		{"receipts", `{"error":{"code":"approval_required","message":"m"}}`, http.StatusNotFound},
		{"keys", `{"keys":[{"kty":"RSA","crv":"Ed25519","x":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA","kid":"k","alg":"EdDSA","use":"sig","status":"current"}]}`, http.StatusOK},
		{"keys", `{"keys":[]}`, http.StatusOK},
	} {
		method, path := http.MethodPost, "/v1/tools/earthquake-search/"+c.op
		switch c.op {
		case "receipts":
			method, path = http.MethodGet, "/v1/receipts"
		case "keys":
			method, path = http.MethodGet, "/.well-known/toolgate-receipt-keys"
		}
		req, err := http.NewRequest(method, srv.URL+path, nil)
		require.NoError(t, err)
		resp := &http.Response{StatusCode: c.status, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(strings.NewReader(c.body)), Request: req}
		ok, _ := v.ValidateHttpResponse(req, resp)
		assert.False(t, ok, "%s %d %s must not validate", c.op, c.status, c.body)
	}
}

func TestOpenAPIPortsDraft07Schemas(t *testing.T) {
	t.Parallel()
	srv := newDocsServer(t, legacySchemaTool())
	r := srv.get(t, "/v1/registry/tools/legacy-schemas/openapi.json")
	v := openAPIValidator(t, r.body)
	doc := r.json(t)
	input := doc["components"].(map[string]any)["schemas"].(map[string]any)["ToolInput"].(map[string]any)
	assert.NotContains(t, input, "$schema")
	props := input["properties"].(map[string]any)
	assert.Equal(t, map[string]any{"$ref": "#/components/schemas/ToolInput/definitions/day", "description": "draft-07 ignores minLength beside $ref"}, props["when"])
	assert.Contains(t, props["point"], "prefixItems")
	assert.Equal(t, map[string]any{"detail": []any{"mode"}}, input["dependentRequired"])

	cases := []struct {
		name  string
		input string
		valid bool
	}{
		{"the generated example", "", true},
		{"a date beside $ref keeps no draft-07-ignored minLength", `{"point":[1,2],"when":"2026-05-01"}`, true},
		{"a tuple item of the wrong type", `{"point":["a",2],"when":"2026-05-01"}`, false},
		{"more items than the tuple allows", `{"point":[1,2,3],"when":"2026-05-01"}`, false},
		{"not a date where the definition says date", `{"point":[1,2],"when":"yesterday"}`, false},
		{"detail needs mode", `{"point":[1,2],"when":"2026-05-01","detail":"x"}`, false},
		{"mode needs unit", `{"point":[1,2],"when":"2026-05-01","mode":"m"}`, false},
		{"mode with unit", `{"point":[1,2],"when":"2026-05-01","mode":"m","unit":"c"}`, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var body []byte
			if c.input != "" {
				body = []byte(`{"quoteId":"6a1e3c2b-4d5f-4a7b-8c9d-0e1f2a3b4c5d","input":` + c.input + `}`)
			}
			ok, errs := v.ValidateHttpRequest(exampleCall(t, srv.URL, doc, "legacy-schemas", body))
			assert.Equal(t, c.valid, ok, describeValidation(errs))
		})
	}
}

// TestDocsRecordSchemasAreValid compiles the documentation record's
// standalone schemas as JSON Schema 2020-12 (the compiler checks them
// against the 2020-12 meta-schema) and validates the record's examples
// against them.
func TestDocsRecordSchemasAreValid(t *testing.T) {
	t.Parallel()
	srv := newDocsServer(t, legacySchemaTool())
	opts := config.NewValidationOptions(config.WithFormatAssertions())
	for _, slug := range append(append([]string{}, builtInSlugs...), "legacy-schemas") {
		t.Run(slug, func(t *testing.T) {
			inv := srv.get(t, "/v1/registry/tools/"+slug+"/docs").json(t)["invocation"].(map[string]any)
			call := inv["call"].(map[string]any)
			quote := inv["quote"].(map[string]any)
			for _, c := range []struct {
				schema  any
				example any
			}{
				{call["requestSchema"], call["requestExample"]},
				{call["responseSchema"], call["responseExample"]},
				{quote["responseSchema"], nil},
			} {
				raw, err := json.Marshal(c.schema)
				require.NoError(t, err)
				compiled, err := helpers.NewCompiledSchema(slug, raw, opts)
				require.NoError(t, err, "%s", raw)
				if c.example != nil {
					assert.NoError(t, compiled.Validate(c.example))
				}
			}
		})
	}
}

// TestOpenAPIDescribesRealResponses sends the documented requests to the
// gateway and checks that what it answers, successes and errors alike, is
// what the OpenAPI document says.
func TestOpenAPIDescribesRealResponses(t *testing.T) {
	t.Parallel()
	srv := newDocsServer(t, legacySchemaTool())
	for _, c := range []struct {
		slug         string
		callStatus   int
		resultStatus string
	}{
		{"earthquake-search", http.StatusOK, "completed"},
		{"exchange-rates", http.StatusOK, "completed"},
		{"public-holidays", http.StatusOK, "completed"},
		{"goal-data", http.StatusForbidden, ""},
		{"current-weather", http.StatusForbidden, ""},
		// The generated example passes the gateway's own input check; the
		// provider is unreachable, so the call fails (and is not charged).
		{"legacy-schemas", http.StatusOK, "failed"},
	} {
		t.Run(c.slug, func(t *testing.T) {
			r := srv.get(t, "/v1/registry/tools/"+c.slug+"/openapi.json")
			v := openAPIValidator(t, r.body)
			doc := r.json(t)
			check := func(req *http.Request, resp *http.Response, wantStatus int) map[string]any {
				t.Helper()
				body, err := io.ReadAll(resp.Body)
				require.NoError(t, err)
				resp.Body.Close()
				require.Equal(t, wantStatus, resp.StatusCode, "%s", body)
				resp.Body = io.NopCloser(bytes.NewReader(body))
				ok, errs := v.ValidateHttpResponse(req, resp)
				requireValid(t, ok, errs, fmt.Sprintf("%s %s answered %d %s", req.Method, req.URL.Path, resp.StatusCode, body))
				var out map[string]any
				require.NoError(t, json.Unmarshal(body, &out))
				return out
			}
			send := func(req *http.Request) *http.Response {
				t.Helper()
				resp, err := srv.Client().Do(req)
				require.NoError(t, err)
				return resp
			}

			// Quote without a key: 401.
			quoteURL := srv.URL + "/v1/tools/" + c.slug + "/quote"
			req, err := http.NewRequest(http.MethodPost, quoteURL, strings.NewReader("{}"))
			require.NoError(t, err)
			check(req, send(req), http.StatusUnauthorized)

			// Quote: 201.
			req, err = http.NewRequest(http.MethodPost, quoteURL, strings.NewReader("{}"))
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer "+docsKey)
			req.Header.Set("Content-Type", "application/json")
			q := check(req, send(req), http.StatusCreated)
			quoteID := q["quote"].(map[string]any)["id"].(string)

			// A call without an Idempotency-Key: 400.
			req = exampleCall(t, srv.URL, doc, c.slug, nil)
			req.Header.Del("Idempotency-Key")
			check(req, send(req), http.StatusBadRequest)

			// A call under a quote never issued: 404, before any policy check.
			req = exampleCall(t, srv.URL, doc, c.slug, nil)
			check(req, send(req), http.StatusNotFound)

			// The documented example under the real quote.
			var example map[string]any
			raw, err := io.ReadAll(exampleCall(t, srv.URL, doc, c.slug, nil).Body)
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(raw, &example))
			example["quoteId"] = quoteID
			body, err := json.Marshal(example)
			require.NoError(t, err)
			req = exampleCall(t, srv.URL, doc, c.slug, body)
			res := check(req, send(req), c.callStatus)
			if c.resultStatus != "" {
				assert.Equal(t, c.resultStatus, res["status"])
				assert.Contains(t, res, "receipt", "the result carries its receipt")
				// The document holds the receipt to its shape: the same
				// answer with a receipt that is not one does not validate.
				res["receipt"].(map[string]any)["signature"].(map[string]any)["alg"] = "RS256"
				broken, err := json.Marshal(res)
				require.NoError(t, err)
				resp := &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
					Body: io.NopCloser(bytes.NewReader(broken)), Request: req}
				ok, _ := v.ValidateHttpResponse(req, resp)
				assert.False(t, ok, "a receipt signed with another algorithm must not validate")
			} else {
				assert.Equal(t, "tool_blocked", res["error"].(map[string]any)["code"])
			}

			// The chain of receipts and the keys it verifies with, at the
			// paths the document gives, and the refusals of the chain.
			paths := doc["paths"].(map[string]any)
			require.Contains(t, paths, "/v1/receipts")
			require.Contains(t, paths, "/.well-known/toolgate-receipt-keys")
			get := func(path, key string) *http.Request {
				req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
				require.NoError(t, err)
				if key != "" {
					req.Header.Set("Authorization", "Bearer "+key)
				}
				return req
			}
			req = get("/v1/receipts", docsKey)
			page := check(req, send(req), http.StatusOK)
			if c.resultStatus != "" {
				chain := page["receipts"].([]any)
				require.NotEmpty(t, chain)
				last := chain[len(chain)-1].(map[string]any)["receipt"].(map[string]any)
				assert.Equal(t, res["id"], last["executionId"])
				req = get("/v1/receipts?limit=1", docsKey)
				check(req, send(req), http.StatusOK)
			}
			req = get("/v1/receipts?limit=0", docsKey)
			assert.Equal(t, "limit", check(req, send(req), http.StatusBadRequest)["error"].(map[string]any)["parameter"])
			req = get("/v1/receipts", "")
			check(req, send(req), http.StatusUnauthorized)
			req = get("/.well-known/toolgate-receipt-keys", "")
			assert.NotEmpty(t, check(req, send(req), http.StatusOK)["keys"])
		})
	}
}

func TestOpenAPIDescribesInputErrors(t *testing.T) {
	t.Parallel()
	srv := newDocsServer(t)
	r := srv.get(t, "/v1/registry/tools/earthquake-search/openapi.json")
	v := openAPIValidator(t, r.body)
	doc := r.json(t)
	q := srv.send(t, http.MethodPost, "/v1/tools/earthquake-search/quote", "{}", "Authorization", "Bearer "+docsKey).json(t)
	quote := q["quote"].(map[string]any)
	body := fmt.Sprintf(`{"quoteId":%q,"input":{"starttime":"2024-09-25","limit":1000},"approval":{"manifestDigest":%q}}`, quote["id"], quote["manifestDigest"])
	req := exampleCall(t, srv.URL, doc, "earthquake-search", []byte(body))
	resp, err := srv.Client().Do(exampleCall(t, srv.URL, doc, "earthquake-search", []byte(body)))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	ok, errs := v.ValidateHttpResponse(req, resp)
	requireValid(t, ok, errs, "the input_invalid answer")
}

// TestOpenAPIDocumentsTheGrant: in approver mode a call carries the grant
// of an approval request, and the OpenAPI document describes that call
// and its refusals, as the other documents describe where to ask.
func TestOpenAPIDocumentsTheGrant(t *testing.T) {
	t.Parallel()
	srv := newApproverDocsServer(t)
	r := srv.get(t, "/v1/registry/tools/echo/openapi.json")
	require.Equal(t, http.StatusOK, r.status)
	v := openAPIValidator(t, r.body)
	doc := r.json(t)
	approval := doc["components"].(map[string]any)["schemas"].(map[string]any)["Approval"].(map[string]any)
	assert.Contains(t, approval["properties"], "grantId")
	assert.Contains(t, approval["description"], "approver mode")

	// A call with a grant is a documented request, and its refusals are
	// documented answers.
	agent := []string{"Authorization", "Bearer " + agentKey, "Content-Type", "application/json"}
	quote := srv.send(t, http.MethodPost, "/v1/tools/echo/quote", "{}", agent...).json(t)["quote"].(map[string]any)
	asked := srv.send(t, http.MethodPost, "/v1/approval-requests", fmt.Sprintf(`{"quoteId":%q,"input":{"v":"hello"}}`, quote["id"]), agent...)
	require.Equal(t, http.StatusCreated, asked.status, "%s", asked.body)
	withGrant := fmt.Sprintf(`{"quoteId":%q,"input":{"v":"hello"},"approval":{"manifestDigest":%q,"grantId":%q}}`, quote["id"], quote["manifestDigest"], asked.json(t)["id"])
	digestOnly := fmt.Sprintf(`{"quoteId":%q,"input":{"v":"hello"},"approval":{"manifestDigest":%q}}`, quote["id"], quote["manifestDigest"])
	httpReq := exampleCall(t, srv.URL, doc, "echo", []byte(withGrant))
	httpReq.Header.Set("Authorization", "Bearer "+agentKey)
	ok, errs := v.ValidateHttpRequest(httpReq)
	requireValid(t, ok, errs, "a call with a grant")
	for _, c := range []struct{ body, want string }{{withGrant, "approval_pending"}, {digestOnly, "approval_required"}} {
		httpReq := exampleCall(t, srv.URL, doc, "echo", []byte(c.body))
		httpReq.Header.Set("Authorization", "Bearer "+agentKey)
		resp, err := srv.Client().Do(httpReq)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		resp.Body.Close()
		got := docsReply{status: resp.StatusCode, body: body}.json(t)["error"].(map[string]any)
		require.Equal(t, c.want, got["code"])
		resp.Body = io.NopCloser(bytes.NewReader(body))
		ok, errs := v.ValidateHttpResponse(httpReq, resp)
		requireValid(t, ok, errs, c.want)
	}

	// An approver reads the receipts of the principals it approves for,
	// and those answers, the refusals included, are documented too.
	for _, c := range []struct {
		query  string
		status int
	}{
		{"?principal=agent", http.StatusOK},
		{"?principal=nobody", http.StatusNotFound},
		{"", http.StatusBadRequest},
	} {
		httpReq, err := http.NewRequest(http.MethodGet, srv.URL+"/v1/receipts"+c.query, nil)
		require.NoError(t, err)
		httpReq.Header.Set("Authorization", "Bearer "+patKey)
		resp, err := srv.Client().Do(httpReq)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, c.status, resp.StatusCode, "%s: %s", c.query, body)
		resp.Body = io.NopCloser(bytes.NewReader(body))
		ok, errs := v.ValidateHttpResponse(httpReq, resp)
		requireValid(t, ok, errs, "GET /v1/receipts"+c.query)
	}

	llms := string(srv.get(t, "/v1/registry/tools/echo/llms.txt").body)
	assert.Contains(t, llms, "/v1/approval-requests")
	assert.Contains(t, llms, "grantId")
	index := string(srv.get(t, "/v1/registry/llms.txt").body)
	assert.Contains(t, index, "approver mode")
	flow := srv.get(t, "/v1/registry/tools/echo/docs").json(t)["invocation"].(map[string]any)["flow"].([]any)
	assert.Contains(t, flow[1], "/v1/approval-requests")
	assert.Contains(t, flow[2], "grantId")
}
