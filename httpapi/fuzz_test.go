package httpapi_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/toolgate/toolgate/apikey"
	"github.com/toolgate/toolgate/httpapi"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/storage/memory"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"
	"github.com/toolgate/toolgate/tools"
)

// fuzzTarget is a handler over a fresh memory store with one open quote.
type fuzzTarget struct {
	h      http.Handler
	store  *memory.Store
	quote  string
	digest string
}

func newFuzzTarget(tb testing.TB) *fuzzTarget {
	store := memory.New()
	gw := toolgatetest.New(tb, &toolgatetest.Options{Store: store, Tools: tools.All()}).Gateway
	keys := apikey.NewKeyStore()
	require.NoError(tb, keys.AddKey("alice", aliceKey))
	q, err := gw.Quote(context.Background(), "alice", "earthquake-search")
	require.NoError(tb, err)
	return &fuzzTarget{
		h:      httpapi.NewHandler(gw, &httpapi.Options{Authenticator: keys}),
		store:  store,
		quote:  q.Quote.ID,
		digest: *q.Quote.ManifestDigest,
	}
}

// FuzzCallRequest sends arbitrary bodies and Idempotency-Keys to the call
// endpoint. Whatever arrives: no 5xx, no panic, and a refused request
// leaves no idempotency record behind.
func FuzzCallRequest(f *testing.F) {
	target := newFuzzTarget(f)
	valid := `{"quoteId":"` + target.quote + `","input":{"starttime":"2024-09-25"},"approval":{"manifestDigest":"` + target.digest + `"}}`
	f.Add([]byte(valid), "k-valid")
	f.Add([]byte(`{"quoteId":"`+target.quote+`","input":{"starttime":"2024-09-25","limit":1e400}}`), "k1")
	f.Add([]byte(`{"quoteId":null,"input":null,"approval":null}`), "k2")
	f.Add([]byte(`{"quoteId":"x","input":[],"approval":{"manifestDigest":""}}`), "k3")
	f.Add([]byte(`{"quoteId":"`+target.quote+`","input":{"starttime":"2024-09-25"},"priceUsd":"0"}`), "k4")
	f.Add([]byte(strings.Repeat("[", 20000)), "k5")
	f.Add([]byte("\xff\xfe{}"), "k\x00")
	f.Add([]byte(`{"quoteId":"`+target.quote+`","input":{"a":1,"a":2}}`), "")
	f.Add([]byte(`{"quoteId":"x","quoteId":"`+target.quote+`","input":{"starttime":"2024-09-25"}}`), "k6")
	f.Add([]byte(`{"quoteID":"`+target.quote+`","input":{"starttime":"2024-09-25"},"approval":{"manifestDigest":"x","manifestDigest":"`+target.digest+`"}}`), "k7")
	f.Fuzz(func(t *testing.T, body []byte, key string) {
		req := httptest.NewRequest(http.MethodPost, "/v1/tools/earthquake-search/call", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+aliceKey)
		req.Header.Set("Content-Type", "application/json")
		req.Header["Idempotency-Key"] = []string{key}
		rec := httptest.NewRecorder()
		target.h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("status %d for body %q: %s", rec.Code, body, rec.Body.Bytes())
		}
		if rec.Code != http.StatusOK && toolgatetype.ValidateIdempotencyKey(key) == nil {
			if _, err := target.store.GetIdempotency(context.Background(), "alice", key); err != storage.ErrNotFound {
				t.Fatalf("refused request (%d) left a record for key %q: %v", rec.Code, key, err)
			}
		}
	})
}

// FuzzAuthorization sends arbitrary Authorization headers. Only the exact
// bearer key is let in; everything else is a 401 that reads the same.
func FuzzAuthorization(f *testing.F) {
	target := newFuzzTarget(f)
	for _, seed := range []string{"Bearer " + aliceKey, "bearer " + aliceKey, "Bearer", "Bearer ", "Basic " + aliceKey,
		"Bearer " + aliceKey + "x", "Bearer " + aliceKey + " extra", "Bearer\t" + aliceKey, strings.Repeat("A", 9000), "\x00"} {
		f.Add(seed)
	}
	var refusal []byte
	f.Fuzz(func(t *testing.T, header string) {
		req := httptest.NewRequest(http.MethodGet, "/v1/spend-controls", nil)
		req.Header["Authorization"] = []string{header}
		rec := httptest.NewRecorder()
		target.h.ServeHTTP(rec, req)
		scheme, token, _ := strings.Cut(header, " ")
		valid := strings.EqualFold(scheme, "bearer") && strings.TrimSpace(token) == aliceKey
		switch {
		case rec.Code >= 500:
			t.Fatalf("status %d for %q", rec.Code, header)
		case valid && rec.Code != http.StatusOK:
			t.Fatalf("valid key refused: %q -> %d", header, rec.Code)
		case !valid && rec.Code != http.StatusUnauthorized:
			t.Fatalf("invalid key let in: %q -> %d", header, rec.Code)
		case !valid:
			if refusal == nil {
				refusal = rec.Body.Bytes()
			}
			if !bytes.Equal(refusal, rec.Body.Bytes()) || rec.Header().Get("WWW-Authenticate") == "" {
				t.Fatalf("refusals differ: %q vs %q", refusal, rec.Body.Bytes())
			}
		}
	})
}
