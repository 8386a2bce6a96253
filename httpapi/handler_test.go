package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/apikey"
	"github.com/toolgate/toolgate/httpapi"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/storage/memory"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/tools"
)

const (
	aliceKey = "tg_test_alice"
	bobKey   = "tg_test_bob"
)

var t0 = toolgatetest.DefaultStart

// gatedTransport answers as the providers would, but can hold requests
// until released, to observe a call in flight.
type gatedTransport struct {
	mu      sync.Mutex
	gate    chan struct{}
	entered chan struct{}
	inner   http.Handler
}

func (g *gatedTransport) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	gate, entered := g.gate, g.entered
	g.mu.Unlock()
	if gate != nil {
		close(entered)
		<-gate
	}
	g.inner.ServeHTTP(w, r)
}

type api struct {
	t      *testing.T
	srv    *httptest.Server
	gw     *toolgate.Gateway
	reg    *registry.Registry
	clock  *toolgatetest.FakeClock
	store  storage.Store
	upper  *gatedTransport
	client *http.Client
	keys   *apikey.KeyStore
}

func newAPI(t *testing.T, store storage.Store, opts ...func(*toolgate.Config)) *api {
	t.Helper()
	cfg := &toolgate.Config{}
	for _, o := range opts {
		o(cfg)
	}
	tg := toolgatetest.New(t, &toolgatetest.Options{Store: store, Tools: tools.All(), Config: cfg})
	require.NoError(t, tg.Registry.SetTrust("goal-data", registry.Trust{PaymentVerified: registry.Bool(true)}))
	a := &api{t: t, gw: tg.Gateway, reg: tg.Registry, clock: tg.Clock, store: tg.Store, upper: &gatedTransport{inner: tg.Upstream.Handler()}}
	tg.Upstream.Handle(a.upper)
	gw := tg.Gateway
	keys := apikey.NewKeyStore()
	require.NoError(t, keys.AddKey("alice", aliceKey))
	require.NoError(t, keys.AddKey("bob", bobKey))
	a.keys = keys
	a.srv = httptest.NewServer(httpapi.NewHandler(gw, &httpapi.Options{Authenticator: keys, MaxBodyBytes: 4096}))
	t.Cleanup(a.srv.Close)
	a.client = a.srv.Client()
	return a
}

type reply struct {
	status int
	header http.Header
	body   []byte
}

func (r reply) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(r.body, &m), "body: %s", r.body)
	return m
}

// errorCode returns error.code of an error body.
func (r reply) errorCode(t *testing.T) string {
	t.Helper()
	e, ok := r.json(t)["error"].(map[string]any)
	require.True(t, ok, "not an error body: %s", r.body)
	assert.NotEmpty(t, e["message"])
	return e["code"].(string)
}

// errorMessage is error.message of an error body.
func (r reply) errorMessage(t *testing.T) string {
	t.Helper()
	e, ok := r.json(t)["error"].(map[string]any)
	require.True(t, ok, "not an error body: %s", r.body)
	return e["message"].(string)
}

func (a *api) do(method, path, key string, body string, headers ...string) reply {
	a.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, a.srv.URL+path, rd)
	require.NoError(a.t, err)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] == "" {
			req.Header.Del(headers[i])
			continue
		}
		req.Header.Add(headers[i], headers[i+1])
	}
	resp, err := a.client.Do(req)
	require.NoError(a.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(a.t, err)
	return reply{status: resp.StatusCode, header: resp.Header, body: b}
}

type quoted struct {
	Quote struct {
		ID             string  `json:"id"`
		TotalUSD       string  `json:"totalUsd"`
		ManifestDigest *string `json:"manifestDigest"`
	} `json:"quote"`
}

func (a *api) quote(key, tool string) quoted {
	a.t.Helper()
	r := a.do("POST", "/v1/tools/"+tool+"/quote", key, "{}")
	require.Equal(a.t, http.StatusCreated, r.status, "%s", r.body)
	var q quoted
	require.NoError(a.t, json.Unmarshal(r.body, &q))
	return q
}

const quakeInput = `{"starttime":"2024-09-25","limit":5}`

// callBody is a call under q approving its digest (no approval when the
// tool has none to approve).
func callBody(q quoted, input string) string {
	if q.Quote.ManifestDigest == nil {
		return `{"quoteId":"` + q.Quote.ID + `","input":` + input + `}`
	}
	return `{"quoteId":"` + q.Quote.ID + `","input":` + input + `,"approval":{"manifestDigest":"` + *q.Quote.ManifestDigest + `"}}`
}

func (a *api) call(key, tool, idemKey, body string, headers ...string) reply {
	a.t.Helper()
	return a.do("POST", "/v1/tools/"+tool+"/call", key, body, append([]string{"Idempotency-Key", idemKey}, headers...)...)
}

func TestQuoteAndCallOverHTTP(t *testing.T) {
	t.Parallel()
	a := newAPI(t, nil)
	q := a.quote(aliceKey, "earthquake-search")
	r := a.do("POST", "/v1/tools/earthquake-search/quote", aliceKey, "")
	assert.Equal(t, http.StatusCreated, r.status, "an empty quote body is fine")
	m := r.json(t)
	for _, k := range []string{"quote", "tool", "policy", "controls"} {
		assert.Contains(t, m, k)
	}

	first := a.call(aliceKey, "earthquake-search", "key-1", callBody(q, quakeInput))
	require.Equal(t, http.StatusOK, first.status, "%s", first.body)
	assert.Equal(t, "application/json", first.header.Get("Content-Type"))
	id := first.header.Get("Toolgate-Execution-Id")
	assert.Equal(t, id, first.json(t)["id"])
	assert.Equal(t, "completed", first.json(t)["status"])
	assert.Empty(t, first.header.Get("Idempotent-Replayed"))

	again := a.call(aliceKey, "earthquake-search", "key-1", callBody(q, quakeInput))
	require.Equal(t, http.StatusOK, again.status)
	assert.Equal(t, "true", again.header.Get("Idempotent-Replayed"))
	assert.Equal(t, first.body, again.body, "replayed byte for byte")
	assert.Equal(t, id, again.header.Get("Toolgate-Execution-Id"))

	got := a.do("GET", "/v1/executions/"+id, aliceKey, "")
	require.Equal(t, http.StatusOK, got.status)
	assert.Equal(t, first.body, got.body)
	assert.Equal(t, "execution_not_found", a.do("GET", "/v1/executions/"+id, bobKey, "").errorCode(t))
	assert.Equal(t, "execution_not_found", a.do("GET", "/v1/executions/not-a-uuid", aliceKey, "").errorCode(t))

	// A paid call.
	gq := a.quote(aliceKey, "goal-data")
	paid := a.call(aliceKey, "goal-data", "key-2", callBody(gq, `{"goal":"g","step":1}`))
	require.Equal(t, http.StatusOK, paid.status, "%s", paid.body)
	assert.Equal(t, map[string]any{"priceUsd": "0.1000", "feeUsd": "0.0100", "totalUsd": "0.1100", "currency": "USD"}, paid.json(t)["cost"])
}

// TestErrorCodes drives every error code of the API over HTTP and
// checks each request that is refused stores nothing.
func TestErrorCodes(t *testing.T) {
	t.Parallel()
	type tc struct {
		name   string
		status int
		code   string
		run    func(a *api) reply
		check  func(t *testing.T, r reply)
	}
	quake := "earthquake-search"
	tests := []tc{
		{"malformed JSON", 400, "invalid_request", func(a *api) reply {
			return a.call(aliceKey, quake, "k", `{"quoteId":`)
		}, nil},
		{"unknown field", 400, "invalid_request", func(a *api) reply {
			q := a.quote(aliceKey, quake)
			return a.call(aliceKey, quake, "k", strings.TrimSuffix(callBody(q, quakeInput), "}")+`,"priceUsd":"0"}`)
		}, func(t *testing.T, r reply) { assert.Contains(t, string(r.body), "priceUsd") }},
		{"wrong type", 400, "invalid_request", func(a *api) reply {
			return a.call(aliceKey, quake, "k", `{"quoteId":42,"input":{}}`)
		}, func(t *testing.T, r reply) { assert.Contains(t, string(r.body), "quoteId must be a string") }},
		{"missing quote id", 400, "invalid_request", func(a *api) reply {
			return a.call(aliceKey, quake, "k", `{"input":{}}`)
		}, nil},
		{"two JSON values", 400, "invalid_request", func(a *api) reply {
			q := a.quote(aliceKey, quake)
			return a.call(aliceKey, quake, "k", callBody(q, quakeInput)+`{}`)
		}, nil},
		{"quote body not JSON", 400, "invalid_request", func(a *api) reply {
			return a.do("POST", "/v1/tools/"+quake+"/quote", aliceKey, "not json")
		}, nil},
		{"bad limit parameter", 400, "invalid_request", func(a *api) reply {
			return a.do("GET", "/v1/registry/tools?limit=ten", "", "")
		}, nil},
		{"missing idempotency key", 400, "idempotency_key_missing", func(a *api) reply {
			q := a.quote(aliceKey, quake)
			return a.call(aliceKey, quake, "", callBody(q, quakeInput), "Idempotency-Key", "")
		}, nil},
		{"invalid idempotency key", 400, "idempotency_key_invalid", func(a *api) reply {
			q := a.quote(aliceKey, quake)
			return a.call(aliceKey, quake, strings.Repeat("x", 256), callBody(q, quakeInput))
		}, nil},
		{"duplicate idempotency key headers", 400, "idempotency_key_invalid", func(a *api) reply {
			q := a.quote(aliceKey, quake)
			return a.call(aliceKey, quake, "k", callBody(q, quakeInput), "Idempotency-Key", "k2")
		}, nil},
		{"no API key", 401, "unauthorized", func(a *api) reply {
			return a.do("POST", "/v1/tools/"+quake+"/quote", "", "{}")
		}, func(t *testing.T, r reply) {
			assert.Equal(t, `Bearer realm="toolgate"`, r.header.Get("WWW-Authenticate"))
		}},
		{"unknown API key", 401, "unauthorized", func(a *api) reply {
			return a.do("POST", "/v1/tools/"+quake+"/quote", "tg_wrong", "{}")
		}, func(t *testing.T, r reply) { assert.NotEmpty(t, r.header.Get("WWW-Authenticate")) }},
		{"malformed authorization", 401, "unauthorized", func(a *api) reply {
			return a.do("POST", "/v1/tools/"+quake+"/quote", "", "{}", "Authorization", "Basic "+aliceKey)
		}, nil},
		{"blocked tool", 403, "tool_blocked", func(a *api) reply {
			q := a.quote(aliceKey, "current-weather")
			return a.call(aliceKey, "current-weather", "k", callBody(q, `{"latitude":1,"longitude":2}`))
		}, func(t *testing.T, r reply) {
			e := r.json(t)["error"].(map[string]any)
			assert.Equal(t, "blocked", e["approvalRequirement"])
			assert.Len(t, e["reasons"], 5)
		}},
		{"approval required", 403, "approval_required", func(a *api) reply {
			q := a.quote(aliceKey, quake)
			return a.call(aliceKey, quake, "k", `{"quoteId":"`+q.Quote.ID+`","input":`+quakeInput+`}`)
		}, func(t *testing.T, r reply) {
			e := r.json(t)["error"].(map[string]any)
			assert.Equal(t, "explicit_unverified", e["approvalRequirement"])
			assert.Regexp(t, `^sha256:`, e["manifestDigest"])
			assert.Equal(t, []any{"endpoint origin is not verified"}, e["reasons"])
		}},
		{"approval mismatch", 403, "approval_mismatch", func(a *api) reply {
			q := a.quote(aliceKey, quake)
			wrong := "sha256:" + strings.Repeat("0", 64)
			q.Quote.ManifestDigest = &wrong
			return a.call(aliceKey, quake, "k", callBody(q, quakeInput))
		}, nil},
		{"spend limit", 403, "spend_limit_exceeded", func(a *api) reply {
			r := a.do("PUT", "/v1/spend-controls", aliceKey, `{"dailyLimitUsd":"0.1000"}`)
			require.Equal(t, 200, r.status, "%s", r.body)
			q := a.quote(aliceKey, "goal-data")
			return a.call(aliceKey, "goal-data", "k", callBody(q, `{"goal":"g","step":1}`))
		}, func(t *testing.T, r reply) {
			e := r.json(t)["error"].(map[string]any)
			assert.Equal(t, []any{"Call would exceed global daily limit of $0.1000"}, e["violations"])
		}},
		{"tool not found", 404, "tool_not_found", func(a *api) reply {
			return a.do("POST", "/v1/tools/nope/quote", aliceKey, "{}")
		}, nil},
		{"tool not found in registry", 404, "tool_not_found", func(a *api) reply {
			return a.do("GET", "/v1/registry/tools/nope", "", "")
		}, nil},
		{"quote not found", 404, "quote_not_found", func(a *api) reply {
			q := a.quote(bobKey, quake)
			return a.call(aliceKey, quake, "k", callBody(q, quakeInput))
		}, nil},
		{"execution not found", 404, "execution_not_found", func(a *api) reply {
			return a.do("GET", "/v1/executions/6f1c1f0e-7d4b-4c53-9a57-2d8f1b7f0a10", aliceKey, "")
		}, nil},
		{"no such path", 404, "not_found", func(a *api) reply {
			return a.do("GET", "/v2/elsewhere", "", "")
		}, nil},
		{"wrong method", 405, "method_not_allowed", func(a *api) reply {
			return a.do("GET", "/v1/tools/"+quake+"/call", aliceKey, "")
		}, func(t *testing.T, r reply) { assert.Contains(t, r.header.Get("Allow"), "POST") }},
		{"quote expired", 409, "quote_expired", func(a *api) reply {
			q := a.quote(aliceKey, quake)
			a.clock.Advance(toolgate.DefaultQuoteTTL)
			return a.call(aliceKey, quake, "k", callBody(q, quakeInput))
		}, nil},
		{"quote used", 409, "quote_used", func(a *api) reply {
			q := a.quote(aliceKey, quake)
			require.Equal(t, 200, a.call(aliceKey, quake, "first", callBody(q, quakeInput)).status)
			return a.call(aliceKey, quake, "k", callBody(q, quakeInput))
		}, nil},
		{"quote outdated", 409, "quote_outdated", func(a *api) reply {
			q := a.quote(aliceKey, quake)
			require.NoError(t, a.reg.SetOrigin(quake, "https://mirror.example.test"))
			v, _ := a.reg.Lookup(quake)
			q.Quote.ManifestDigest = &v.Digest
			return a.call(aliceKey, quake, "k", callBody(q, quakeInput))
		}, nil},
		{"payload too large", 413, "payload_too_large", func(a *api) reply {
			q := a.quote(aliceKey, quake)
			return a.call(aliceKey, quake, "k", callBody(q, `{"starttime":"`+strings.Repeat("9", 5000)+`"}`))
		}, nil},
		{"wrong content type", 415, "unsupported_media_type", func(a *api) reply {
			q := a.quote(aliceKey, quake)
			return a.call(aliceKey, quake, "k", callBody(q, quakeInput), "Content-Type", "", "Content-Type", "text/plain")
		}, nil},
		{"input invalid", 422, "input_invalid", func(a *api) reply {
			q := a.quote(aliceKey, quake)
			return a.call(aliceKey, quake, "k", callBody(q, `{"limit":500}`))
		}, func(t *testing.T, r reply) {
			details := r.json(t)["error"].(map[string]any)["details"].([]any)
			paths := []string{}
			for _, d := range details {
				paths = append(paths, d.(map[string]any)["path"].(string))
				assert.NotEmpty(t, d.(map[string]any)["message"])
			}
			assert.ElementsMatch(t, []string{"input.limit", "input.starttime"}, paths)
		}},
		{"quote for another tool", 422, "quote_tool_mismatch", func(a *api) reply {
			q := a.quote(aliceKey, "public-holidays")
			return a.call(aliceKey, quake, "k", callBody(q, quakeInput))
		}, nil},
		{"rate limited", 429, "rate_limited", func(a *api) reply {
			require.Equal(t, 200, a.do("PUT", "/v1/spend-controls", aliceKey, `{"rateLimitPerMinute":1}`).status)
			q := a.quote(aliceKey, quake)
			require.Equal(t, 200, a.call(aliceKey, quake, "first", callBody(q, quakeInput)).status)
			a.clock.Advance(15 * time.Second)
			q = a.quote(aliceKey, quake)
			return a.call(aliceKey, quake, "k", callBody(q, quakeInput))
		}, func(t *testing.T, r reply) {
			assert.Equal(t, "46", r.header.Get("Retry-After"))
			assert.EqualValues(t, 46, r.json(t)["error"].(map[string]any)["retryAfterSeconds"])
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a := newAPI(t, nil)
			r := tt.run(a)
			require.Equal(t, tt.status, r.status, "%s", r.body)
			assert.Equal(t, "application/json", r.header.Get("Content-Type"))
			assert.Equal(t, tt.code, r.errorCode(t))
			if tt.check != nil {
				tt.check(t, r)
			}
			_, err := a.store.GetIdempotency(context.Background(), "alice", "k")
			assert.ErrorIs(t, err, storage.ErrNotFound, "a refused call stores nothing")
		})
	}
}

func TestKeyReusedAndInUse(t *testing.T) {
	t.Parallel()
	a := newAPI(t, nil)
	q := a.quote(aliceKey, "earthquake-search")

	a.upper.mu.Lock()
	a.upper.gate, a.upper.entered = make(chan struct{}), make(chan struct{})
	gate, entered := a.upper.gate, a.upper.entered
	a.upper.mu.Unlock()
	done := make(chan reply)
	go func() { done <- a.call(aliceKey, "earthquake-search", "k1", callBody(q, quakeInput)) }()
	<-entered
	busy := a.call(aliceKey, "earthquake-search", "k1", callBody(q, quakeInput))
	assert.Equal(t, http.StatusConflict, busy.status)
	assert.Equal(t, "idempotency_key_in_use", busy.errorCode(t))
	a.upper.mu.Lock()
	a.upper.gate = nil
	a.upper.mu.Unlock()
	close(gate)
	require.Equal(t, http.StatusOK, (<-done).status)

	reused := a.call(aliceKey, "earthquake-search", "k1", callBody(q, `{"starttime":"2020-01-01"}`))
	assert.Equal(t, http.StatusUnprocessableEntity, reused.status)
	assert.Equal(t, "idempotency_key_reused", reused.errorCode(t))
}

// failingStore fails every read, to see what an internal error looks like.
type failingStore struct{ storage.Store }

func (failingStore) GetQuote(context.Context, uuid.UUID) (storage.Quote, error) {
	return storage.Quote{}, errors.New("pq: connection refused to db-internal.example:5432 password=hunter2")
}

// ReadBatch and AdmitCall read method by method, so that a call's reads
// meet GetQuote.
func (s failingStore) ReadBatch(ctx context.Context, r storage.Reads) (storage.ReadResult, error) {
	return storage.ReadEach(ctx, s, r)
}

func (s failingStore) AdmitCall(ctx context.Context, r storage.Reads, decide func(storage.ReadResult) (storage.Begin, error)) (storage.BeginResult, error) {
	return storage.AdmitEach(ctx, s, r, decide)
}

func TestInternalErrorLeaksNothing(t *testing.T) {
	t.Parallel()
	a := newAPI(t, failingStore{memory.New()})
	q := a.quote(aliceKey, "earthquake-search")
	r := a.call(aliceKey, "earthquake-search", "k1", callBody(q, quakeInput))
	assert.Equal(t, http.StatusInternalServerError, r.status)
	assert.Equal(t, "internal_error", r.errorCode(t))
	assert.NotContains(t, string(r.body), "hunter2")
	assert.NotContains(t, string(r.body), "db-internal")
}

func TestRegistryListAndEntry(t *testing.T) {
	t.Parallel()
	a := newAPI(t, nil)
	r := a.do("GET", "/v1/registry/tools", "", "")
	require.Equal(t, http.StatusOK, r.status)
	var list struct {
		Tools []map[string]any `json:"tools"`
		Total int              `json:"total"`
	}
	require.NoError(t, json.Unmarshal(r.body, &list))
	assert.Equal(t, 5, list.Total)
	require.Len(t, list.Tools, 5)
	assert.Equal(t, "goal-data", list.Tools[0]["slug"], "verified endpoints come first")

	r = a.do("GET", "/v1/registry/tools?q=EXCHANGE&limit=1", "", "")
	require.NoError(t, json.Unmarshal(r.body, &list))
	assert.Equal(t, 1, list.Total)
	assert.Equal(t, "exchange-rates", list.Tools[0]["slug"])

	r = a.do("GET", "/v1/registry/tools?limit=2&offset=4", "", "")
	require.NoError(t, json.Unmarshal(r.body, &list))
	assert.Equal(t, 5, list.Total)
	assert.Len(t, list.Tools, 1)

	entry := a.do("GET", "/v1/registry/tools/earthquake-search", "", "").json(t)
	for _, field := range []string{"kind", "id", "slug", "name", "logoUrl", "description", "category", "tags", "provider",
		"version", "trust", "risk", "policy", "usage", "pricing", "inputSchema", "outputSchema", "access", "documentation", "updatedAt"} {
		assert.Contains(t, entry, field)
	}
	byID := a.do("GET", "/v1/registry/tools/"+entry["id"].(string), "", "").json(t)
	assert.Equal(t, entry["slug"], byID["slug"])
	usage := entry["usage"].(map[string]any)
	assert.NotContains(t, usage, "count", "exact counts are hidden by default")
	assert.Equal(t, "Under 1K invokes", usage["invocationsLabel"])

	h := a.do("GET", "/healthz", "", "")
	assert.Equal(t, http.StatusOK, h.status)
}

func TestSpendControlsEndpoints(t *testing.T) {
	t.Parallel()
	a := newAPI(t, nil)
	r := a.do("GET", "/v1/spend-controls", aliceKey, "")
	require.Equal(t, 200, r.status)
	assert.JSONEq(t, `{"maxPerCallUsd":null,"dailyLimitUsd":null,"monthlyLimitUsd":null,"rateLimitPerMinute":null,"rateLimitPerHour":null}`, string(r.body))

	r = a.do("PUT", "/v1/spend-controls", aliceKey, `{"dailyLimitUsd":"5","tools":{"goal-data":{"allowed":false}}}`)
	require.Equal(t, 200, r.status, "%s", r.body)
	r = a.do("GET", "/v1/spend-controls", aliceKey, "")
	assert.JSONEq(t, `{"maxPerCallUsd":null,"dailyLimitUsd":"5.0000","monthlyLimitUsd":null,"rateLimitPerMinute":null,"rateLimitPerHour":null,
		"tools":{"goal-data":{"allowed":false,"maxPerCallUsd":null,"dailyLimitUsd":null,"monthlyLimitUsd":null,"rateLimitPerMinute":null,"rateLimitPerHour":null}}}`, string(r.body))

	q := a.quote(aliceKey, "goal-data")
	denied := a.call(aliceKey, "goal-data", "k1", callBody(q, `{"goal":"g","step":1}`))
	assert.Equal(t, "spend_limit_exceeded", denied.errorCode(t))

	r = a.do("PUT", "/v1/spend-controls/tools/goal-data", aliceKey, `{"allowed":true,"dailyLimitUsd":"0.2"}`)
	require.Equal(t, 200, r.status, "%s", r.body)
	assert.Equal(t, "0.2000", a.do("GET", "/v1/spend-controls/tools/goal-data", aliceKey, "").json(t)["dailyLimitUsd"])
	assert.Equal(t, 204, a.do("DELETE", "/v1/spend-controls/tools/goal-data", aliceKey, "").status)
	assert.Equal(t, "not_found", a.do("GET", "/v1/spend-controls/tools/goal-data", aliceKey, "").errorCode(t))
	assert.Equal(t, "not_found", a.do("DELETE", "/v1/spend-controls/tools/goal-data", aliceKey, "").errorCode(t))
	assert.Equal(t, "tool_not_found", a.do("PUT", "/v1/spend-controls/tools/nope", aliceKey, `{}`).errorCode(t))
	assert.Equal(t, "invalid_request", a.do("PUT", "/v1/spend-controls", aliceKey, `{"dailyLimitUsd":"lots"}`).errorCode(t))
	assert.Equal(t, "invalid_request", a.do("PUT", "/v1/spend-controls", aliceKey, `{"dailyLimitUsd":-1}`).errorCode(t))
	assert.Equal(t, "invalid_request", a.do("PUT", "/v1/spend-controls", aliceKey, `{"dailyLimitUsd":"-1"}`).errorCode(t))
	bad := a.do("PUT", "/v1/spend-controls", aliceKey, `{"tools":{"goal-data":{"dailyLimitUsd":"lots"}}}`)
	assert.Contains(t, bad.json(t)["error"].(map[string]any)["message"], "tools.goal-data.dailyLimitUsd", "the bad amount is named")
	misspelt := a.do("PUT", "/v1/spend-controls/tools/goal-data", aliceKey, `{"dailyLimit":"1"}`)
	assert.Contains(t, misspelt.json(t)["error"].(map[string]any)["message"], `unknown field "dailyLimit"`, "a misspelt limit is refused, not dropped")
	assert.Equal(t, "unauthorized", a.do("GET", "/v1/spend-controls", "", "").errorCode(t))

	// Bob's settings are his own.
	assert.JSONEq(t, `{"maxPerCallUsd":null,"dailyLimitUsd":null,"monthlyLimitUsd":null,"rateLimitPerMinute":null,"rateLimitPerHour":null}`,
		string(a.do("GET", "/v1/spend-controls", bobKey, "").body))
}

func TestApprovalEndpoints(t *testing.T) {
	t.Parallel()
	a := newAPI(t, nil)
	q := a.quote(aliceKey, "earthquake-search")
	r := a.do("PUT", "/v1/approvals/earthquake-search", aliceKey, `{"mode":"never_ask","manifestDigest":"`+*q.Quote.ManifestDigest+`"}`)
	require.Equal(t, 200, r.status, "%s", r.body)

	// No approval needed any more for this exact digest.
	q = a.quote(aliceKey, "earthquake-search")
	r = a.call(aliceKey, "earthquake-search", "k1", `{"quoteId":"`+q.Quote.ID+`","input":`+quakeInput+`}`)
	require.Equal(t, 200, r.status, "%s", r.body)

	list := a.do("GET", "/v1/approvals", aliceKey, "").json(t)["approvals"].([]any)
	require.Len(t, list, 1)
	assert.Equal(t, "never_ask", list[0].(map[string]any)["mode"])
	assert.Equal(t, false, list[0].(map[string]any)["stale"])

	assert.Equal(t, "invalid_request", a.do("PUT", "/v1/approvals/earthquake-search", aliceKey, `{"mode":"always"}`).errorCode(t))
	assert.Equal(t, "invalid_request", a.do("PUT", "/v1/approvals/earthquake-search", aliceKey, `{}`).errorCode(t))
	assert.Equal(t, "approval_mismatch", a.do("PUT", "/v1/approvals/earthquake-search", aliceKey, `{"mode":"never_ask","manifestDigest":"sha256:00"}`).errorCode(t))
	assert.Equal(t, "tool_blocked", a.do("PUT", "/v1/approvals/current-weather", aliceKey, `{"mode":"never_ask","manifestDigest":"x"}`).errorCode(t))
	assert.Equal(t, 204, a.do("DELETE", "/v1/approvals/earthquake-search", aliceKey, "").status)
	assert.Equal(t, "not_found", a.do("DELETE", "/v1/approvals/earthquake-search", aliceKey, "").errorCode(t))
	assert.Empty(t, a.do("GET", "/v1/approvals", bobKey, "").json(t)["approvals"])
}

func TestMountedUnderPrefix(t *testing.T) {
	t.Parallel()
	gw := toolgatetest.New(t, &toolgatetest.Options{Tools: tools.All()}).Gateway
	mux := http.NewServeMux()
	mux.Handle("/gateway/", http.StripPrefix("/gateway", httpapi.NewHandler(gw, nil)))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + "/gateway/v1/registry/tools/exchange-rates")
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
}

// TestConcurrentToolControlPutsAllSurvive sets the limits of every built-in
// tool at once, as an operator's script or two browser tabs might: each PUT
// changes one entry of the caller's per-tool controls, and none may be lost
// to another's read-modify-write.
func TestConcurrentToolControlPutsAllSurvive(t *testing.T) {
	t.Parallel()
	a := newAPI(t, nil)
	slugs := []string{"earthquake-search", "exchange-rates", "public-holidays", "goal-data", "current-weather"}
	statuses := make([]int, len(slugs))
	var wg sync.WaitGroup
	for i, slug := range slugs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest(http.MethodPut, a.srv.URL+"/v1/spend-controls/tools/"+slug, strings.NewReader(`{"rateLimitPerMinute":7}`))
			req.Header.Set("Authorization", "Bearer "+aliceKey)
			req.Header.Set("Content-Type", "application/json")
			resp, err := a.client.Do(req)
			if err == nil {
				statuses[i] = resp.StatusCode
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
	tools := a.do("GET", "/v1/spend-controls", aliceKey, "").json(t)["tools"].(map[string]any)
	for i, slug := range slugs {
		assert.Equal(t, http.StatusOK, statuses[i], slug)
		if assert.Contains(t, tools, slug, "a concurrent update lost %s", slug) {
			assert.EqualValues(t, 7, tools[slug].(map[string]any)["rateLimitPerMinute"])
		}
	}
}

// TestKeyInUseAfterACrashSaysWhenTheLeaseEnds: a call whose process died
// mid-call holds its key until its lease ends; a retry before then is 409
// idempotency_key_in_use with Retry-After the seconds left of the lease,
// and a retry after it takes the call over.
func TestKeyInUseAfterACrashSaysWhenTheLeaseEnds(t *testing.T) {
	t.Parallel()
	store := toolgatetest.NewDyingStore(memory.New())
	a := newAPI(t, store)
	q := a.quote(aliceKey, "earthquake-search")
	crashed := a.call(aliceKey, "earthquake-search", "k1", callBody(q, quakeInput))
	require.Equal(t, http.StatusInternalServerError, crashed.status, "the finish was never recorded: %s", crashed.body)
	store.Dying.Store(false)

	for _, c := range []struct {
		after time.Duration
		want  string
	}{
		{0, "60"},
		{20*time.Second + 300*time.Millisecond, "40"}, // 39.7 s left: rounded up
		{59*time.Second + 900*time.Millisecond, "1"},  // 0.1 s left: at least a second
	} {
		a.clock.Set(t0.Add(c.after))
		busy := a.call(aliceKey, "earthquake-search", "k1", callBody(q, quakeInput))
		assert.Equal(t, http.StatusConflict, busy.status, "%s", busy.body)
		assert.Equal(t, "idempotency_key_in_use", busy.errorCode(t))
		assert.Equal(t, c.want, busy.header.Get("Retry-After"), "after %s", c.after)
	}

	a.clock.Set(t0.Add(toolgate.DefaultIdempotencyLease + time.Second))
	r := a.call(aliceKey, "earthquake-search", "k1", callBody(q, quakeInput))
	assert.Equal(t, http.StatusOK, r.status, "the retry takes the call over once the lease ended: %s", r.body)
}
