package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/apikey"
	"github.com/toolgate/toolgate/httpapi"
	"github.com/toolgate/toolgate/internal/jcs"
	"github.com/toolgate/toolgate/receipt"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"
)

// The parties of the receipt tests. The caller's principal holds the
// characters encoding/json escapes, so that a receipt re-encoded on its way
// out would show; every key is distinctive, so that a test can tell it
// never leaks into a receipt or a key document.
const (
	receiptCaller    = "carol & co <ops>"
	receiptCallerKey = "tg_secret_carol_receipts_6d1f0b83a9e24c57"
	receiptOtherKey  = "tg_secret_dave_receipts_2b7e94c0d15a6f38"
	receiptPatKey    = "tg_secret_pat_receipts_approver_81c5e2d7"
	receiptSamKey    = "tg_secret_sam_receipts_approver_4f0a9b36"
)

var receiptSecrets = []string{receiptCallerKey, receiptOtherKey, receiptPatKey, receiptSamKey}

// newReceiptsAPI serves a gateway with the echo tool, where pat approves
// for the caller and for dave, and sam for someone else.
func newReceiptsAPI(t *testing.T) *api {
	t.Helper()
	cfg := &toolgate.Config{Approvers: toolgatetype.StaticApprovers{
		Approvers: map[string][]string{"pat": {receiptCaller, "dave"}, "sam": {"other"}},
	}}
	tg := toolgatetest.New(t, &toolgatetest.Options{Config: cfg})
	a := &api{t: t, gw: tg.Gateway, reg: tg.Registry, clock: tg.Clock, store: tg.Store}
	keys := apikey.NewKeyStore()
	require.NoError(t, keys.AddKey(receiptCaller, receiptCallerKey))
	require.NoError(t, keys.AddKey("dave", receiptOtherKey))
	require.NoError(t, keys.AddApproverKey("pat", receiptPatKey))
	require.NoError(t, keys.AddApproverKey("sam", receiptSamKey))
	a.keys = keys
	a.srv = httptest.NewServer(httpapi.NewHandler(tg.Gateway, &httpapi.Options{Authenticator: keys}))
	t.Cleanup(a.srv.Close)
	a.client = a.srv.Client()
	return a
}

// echoCall quotes and calls echo with v as key, and returns the answer.
func (a *api) echoCall(key, v string) reply {
	a.t.Helper()
	q := a.quote(key, "echo")
	r := a.call(key, "echo", "receipts-"+v, callBody(q, `{"v":"`+v+`"}`))
	require.Equal(a.t, http.StatusOK, r.status, "%s", r.body)
	return r
}

// receiptPage is GET /v1/receipts as the wire has it.
type receiptPage struct {
	Receipts []json.RawMessage `json:"receipts"`
	Next     *int64            `json:"next"`
}

func (a *api) receipts(key, query string) (receiptPage, reply) {
	a.t.Helper()
	r := a.do("GET", "/v1/receipts"+query, key, "")
	require.Equal(a.t, http.StatusOK, r.status, "%s", r.body)
	assert.Equal(a.t, "application/json", r.header.Get("Content-Type"))
	var p receiptPage
	require.NoError(a.t, json.Unmarshal(r.body, &p))
	return p, r
}

func assertNoSecrets(t *testing.T, what string, body []byte) {
	t.Helper()
	for _, key := range receiptSecrets {
		assert.NotContains(t, string(body), key, "%s carries an API key", what)
	}
}

// TestReceiptChainOverHTTP: a caller's three calls each answer with a
// receipt; its chain, read over HTTP two at a time, is those receipts as
// signed, in order, and verifies offline with the published keys.
func TestReceiptChainOverHTTP(t *testing.T) {
	t.Parallel()
	a := newReceiptsAPI(t)
	var calls []reply
	for _, v := range []string{"one", "two", "three"} {
		calls = append(calls, a.echoCall(receiptCallerKey, v))
	}

	first, r1 := a.receipts(receiptCallerKey, "?limit=2")
	require.Len(t, first.Receipts, 2)
	require.NotNil(t, first.Next)
	assert.Equal(t, int64(2), *first.Next)
	second, r2 := a.receipts(receiptCallerKey, fmt.Sprintf("?after=%d&limit=2", *first.Next))
	require.Len(t, second.Receipts, 1)
	assert.Nil(t, second.Next, "the last page names no next")
	assert.NotContains(t, string(r2.body), `"next"`)
	chain := append(first.Receipts, second.Receipts...)

	// Served byte for byte as the gateway holds them.
	held, err := a.gw.Receipts(context.Background(), receiptCaller, 0, 10)
	require.NoError(t, err)
	require.Len(t, held.Receipts, 3)
	for i := range chain {
		assert.Equal(t, string(held.Receipts[i]), string(chain[i]), "receipt %d", i+1)
	}
	assert.Contains(t, string(r1.body), `"principal":"carol & co <ops>"`, "not re-encoded on the way out")

	// The keys are public.
	k := a.do("GET", "/.well-known/toolgate-receipt-keys", "", "")
	require.Equal(t, http.StatusOK, k.status, "%s", k.body)
	assert.Equal(t, "application/json", k.header.Get("Content-Type"))
	assert.Contains(t, k.header.Get("Cache-Control"), "max-age=")
	var keys toolgatetype.ReceiptKeys
	require.NoError(t, json.Unmarshal(k.body, &keys))
	require.NotEmpty(t, keys.Keys)
	assert.Equal(t, toolgatetype.ReceiptKeyCurrent, keys.Keys[0].Status)
	assert.Equal(t, a.gw.ReceiptKeys(), keys)
	wrongKey := a.do("GET", "/.well-known/toolgate-receipt-keys", "tg_no_such_key", "")
	assert.Equal(t, http.StatusOK, wrongKey.status, "no key is asked for, so none is refused")

	// The chain verifies with them, offline.
	v, err := receipt.NewVerifier(keys)
	require.NoError(t, err)
	for i, signed := range chain {
		require.NoError(t, v.Add(signed), "receipt %d", i+1)
	}
	assert.Equal(t, 3, v.Count())

	// Each call's answer carries its receipt: the one in the chain.
	for i, c := range calls {
		var res struct {
			ID      string          `json:"id"`
			Receipt json.RawMessage `json:"receipt"`
		}
		require.NoError(t, json.Unmarshal(c.body, &res))
		require.NotEmpty(t, res.Receipt, "call %d answered without its receipt", i+1)
		canonical, err := jcs.Canonicalize(res.Receipt)
		require.NoError(t, err)
		assert.Equal(t, string(chain[i]), string(canonical), "call %d", i+1)
		var signed toolgatetype.SignedReceipt
		require.NoError(t, json.Unmarshal(chain[i], &signed))
		assert.Equal(t, res.ID, signed.Receipt.ExecutionID)
		assert.Equal(t, int64(i+1), signed.Receipt.Seq)
		assert.Equal(t, receiptCaller, signed.Receipt.Principal)
		assert.Equal(t, keys.Keys[0].KeyID, signed.Signature.KeyID)
		assertNoSecrets(t, "a call's answer", c.body)
	}

	// Changed by a byte, a receipt no longer verifies.
	forged := strings.Replace(string(chain[0]), `"status":"completed"`, `"status":"failed"`, 1)
	require.NotEqual(t, string(chain[0]), forged)
	v, err = receipt.NewVerifier(keys)
	require.NoError(t, err)
	var br *receipt.Break
	require.ErrorAs(t, v.Add([]byte(forged)), &br)
	assert.Equal(t, receipt.CheckSignature, br.Check)

	// Past the end: an empty page.
	empty, r3 := a.receipts(receiptCallerKey, "?after=3")
	assert.Empty(t, empty.Receipts)
	assert.Nil(t, empty.Next)
	assert.JSONEq(t, `{"receipts":[]}`, string(r3.body))

	for what, body := range map[string][]byte{"page 1": r1.body, "page 2": r2.body, "the key document": k.body} {
		assertNoSecrets(t, what, body)
	}
}

// TestReceiptsAreEachPrincipals: a caller reads its own chain only, a
// principal= it sends is not read; an approver reads the chain of a
// principal it approves for, and no other's.
func TestReceiptsAreEachPrincipals(t *testing.T) {
	t.Parallel()
	a := newReceiptsAPI(t)
	a.echoCall(receiptCallerKey, "mine")
	a.echoCall(receiptOtherKey, "daves")
	a.echoCall(receiptOtherKey, "daves-too")

	principals := func(p receiptPage) []string {
		var out []string
		for _, raw := range p.Receipts {
			var s toolgatetype.SignedReceipt
			require.NoError(t, json.Unmarshal(raw, &s))
			out = append(out, s.Receipt.Principal)
		}
		return out
	}
	own, _ := a.receipts(receiptCallerKey, "")
	assert.Equal(t, []string{receiptCaller}, principals(own))
	asked, _ := a.receipts(receiptCallerKey, "?principal=dave")
	assert.Equal(t, []string{receiptCaller}, principals(asked), "a caller's principal= is not read")
	twice, _ := a.receipts(receiptOtherKey, "?principal=a&principal=b")
	assert.Equal(t, []string{"dave", "dave"}, principals(twice), "nor refused")

	// An approver names a principal it approves for.
	forCaller, body := a.receipts(receiptPatKey, "?principal="+url.QueryEscape(receiptCaller))
	assert.Equal(t, own, forCaller)
	assertNoSecrets(t, "an approver's page", body.body)
	forDave, _ := a.receipts(receiptPatKey, "?principal=dave&limit=1")
	assert.Equal(t, []string{"dave"}, principals(forDave))
	require.NotNil(t, forDave.Next)
	rest, _ := a.receipts(receiptPatKey, "?principal=dave&after=1")
	assert.Equal(t, []string{"dave"}, principals(rest))

	for _, c := range []struct {
		name, key, query string
		status           int
		code, parameter  string
	}{
		{"AnApproverNamingNoOne", receiptPatKey, "", http.StatusBadRequest, "invalid_request", "principal"},
		{"AnApproverNamingAnEmptyPrincipal", receiptPatKey, "?principal=", http.StatusBadRequest, "invalid_request", "principal"},
		{"AnApproverNamingTwo", receiptPatKey, "?principal=dave&principal=" + url.QueryEscape(receiptCaller), http.StatusBadRequest, "invalid_request", "principal"},
		{"AnApproverOfOthers", receiptSamKey, "?principal=dave", http.StatusNotFound, "not_found", ""},
		{"APrincipalNotApprovedFor", receiptPatKey, "?principal=erin", http.StatusNotFound, "not_found", ""},
		{"NoKey", "", "", http.StatusUnauthorized, "unauthorized", ""},
		{"AnUnknownKey", "tg_no_such_key", "", http.StatusUnauthorized, "unauthorized", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := a.do("GET", "/v1/receipts"+c.query, c.key, "")
			assert.Equal(t, c.status, r.status, "%s", r.body)
			assert.Equal(t, c.code, r.errorCode(t))
			e := r.json(t)["error"].(map[string]any)
			if c.parameter != "" {
				assert.Equal(t, c.parameter, e["parameter"])
			} else {
				assert.NotContains(t, e, "parameter")
			}
			assert.NotContains(t, string(r.body), "daves", "no receipt of another's")
		})
	}
	// Not found says as much for a principal with receipts as for one
	// with none.
	withReceipts := a.do("GET", "/v1/receipts?principal=dave", receiptSamKey, "").json(t)["error"].(map[string]any)
	without := a.do("GET", "/v1/receipts?principal=nobody", receiptSamKey, "").json(t)["error"].(map[string]any)
	assert.Equal(t, strings.Replace(withReceipts["message"].(string), "dave", "nobody", 1), without["message"])
}

func TestReceiptsRefuseBadQueries(t *testing.T) {
	t.Parallel()
	a := newReceiptsAPI(t)
	for _, c := range []struct{ query, parameter string }{
		{"?after=-1", "after"},
		{"?after=x", "after"},
		{"?after=1.5", "after"},
		{"?after=99999999999999999999", "after"},
		{"?after=1&after=2", "after"},
		{"?limit=0", "limit"},
		{"?limit=-3", "limit"},
		{"?limit=1001", "limit"},
		{"?limit=ten", "limit"},
		{"?limit=1&limit=2", "limit"},
	} {
		for _, key := range []string{receiptCallerKey, receiptPatKey} {
			query := c.query
			if key == receiptPatKey {
				query += "&principal=dave"
			}
			r := a.do("GET", "/v1/receipts"+query, key, "")
			assert.Equal(t, http.StatusBadRequest, r.status, "%s: %s", query, r.body)
			assert.Equal(t, "invalid_request", r.errorCode(t), query)
			assert.Equal(t, c.parameter, r.json(t)["error"].(map[string]any)["parameter"], query)
		}
	}
	// The bounds themselves are fine.
	for _, query := range []string{"?after=0", "?limit=1", "?limit=1000", "?after=0&limit=100"} {
		a.receipts(receiptCallerKey, query)
	}
	r := a.do("POST", "/v1/receipts", receiptCallerKey, "{}")
	assert.Equal(t, http.StatusMethodNotAllowed, r.status)
	assert.Equal(t, "method_not_allowed", r.errorCode(t))
	r = a.do("POST", "/.well-known/toolgate-receipt-keys", "", "{}")
	assert.Equal(t, http.StatusMethodNotAllowed, r.status)
}

// TestReceiptKeysUnderAPrefix: mounted under a prefix, the API publishes
// its keys under it too, as it serves everything else.
func TestReceiptKeysUnderAPrefix(t *testing.T) {
	t.Parallel()
	a := newReceiptsAPI(t)
	mux := http.NewServeMux()
	mux.Handle("/gateway/", http.StripPrefix("/gateway", httpapi.NewHandler(a.gw, nil)))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	resp, err := srv.Client().Get(srv.URL + "/gateway" + httpapi.ReceiptKeysPath)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var keys toolgatetype.ReceiptKeys
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&keys))
	assert.Equal(t, a.gw.ReceiptKeys(), keys)
}

// TestReceiptsWithAccessTokens: a caller's token reads its own chain, an
// approver's token that of a principal it approves for.
func TestReceiptsWithAccessTokens(t *testing.T) {
	t.Parallel()
	a := newAPI(t, nil, func(c *toolgate.Config) {
		c.Approvers = toolgatetype.StaticApprovers{Approvers: map[string][]string{"pat": {"agent-1"}}}
	})
	idp := withTokens(t, a)
	token := idp.Token(t, "agent-1")
	q := a.quote(token, "earthquake-search")
	r := a.call(token, "earthquake-search", "token-receipt", callBody(q, quakeInput))
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)

	own, _ := a.receipts(token, "")
	require.Len(t, own.Receipts, 1)
	pat := idp.Token(t, "pat")
	theirs, _ := a.receipts(pat, "?principal=agent-1")
	assert.Equal(t, own, theirs)
	refused := a.do("GET", "/v1/receipts?principal=alice", pat, "")
	assert.Equal(t, http.StatusNotFound, refused.status)
	assert.NotContains(t, string(r.body), token)
}

// FuzzReceiptsQuery sends arbitrary query strings to GET /v1/receipts:
// whatever arrives, a page (200) or invalid_request (400), never a 5xx.
func FuzzReceiptsQuery(f *testing.F) {
	target := newFuzzTarget(f)
	for _, seed := range []string{"", "after=0&limit=1", "after=-1", "limit=1001", "after=9223372036854775807", "after=9223372036854775808",
		"limit=%zz", "after=1&after=2", "principal=bob", "limit=+5", "after=0x10", "limit=1e3", "after=%00"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, query string) {
		req := httptest.NewRequest(http.MethodGet, "/v1/receipts", nil)
		req.URL.RawQuery = query
		req.Header.Set("Authorization", "Bearer "+aliceKey)
		rec := httptest.NewRecorder()
		target.h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK && rec.Code != http.StatusBadRequest {
			t.Fatalf("status %d for %q: %s", rec.Code, query, rec.Body.Bytes())
		}
		if rec.Code == http.StatusOK && !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("a page that is not JSON for %q: %s", query, rec.Body.Bytes())
		}
	})
}
