package httpapi_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/storage/memory"
	"github.com/toolgate/toolgate/storage/postgres"
	"github.com/toolgate/toolgate/storage/sqlite"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"
)

// receiptStores are the stores a finished call's receipt is kept in: its
// row only, the stored response without it (see storage.WithReceipt).
var receiptStores = []struct {
	name string
	open func(t *testing.T) storage.Store
}{
	{"memory", func(*testing.T) storage.Store { return memory.New() }},
	{"sqlite", func(t *testing.T) storage.Store {
		s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "toolgate.db"), nil)
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return s
	}},
	{"postgres", openPostgres},
}

// openPostgres opens a Store on a new schema of the test database, dropped
// when the test ends; the test is skipped without a database.
func openPostgres(t *testing.T) storage.Store {
	t.Helper()
	const urlEnv = "TOOLGATE_TEST_POSTGRES_URL"
	url := os.Getenv(urlEnv)
	if url == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set; CI must run the PostgreSQL tests", urlEnv)
		}
		t.Skipf("%s is not set; skipping PostgreSQL", urlEnv)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := pgx.Identifier{"toolgate_test_httpapi_" + hex.EncodeToString(b[:])}
	exec := func(sql string) error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, sql)
		return err
	}
	require.NoError(t, exec("CREATE SCHEMA "+schema.Sanitize()))
	t.Cleanup(func() {
		if err := exec("DROP SCHEMA IF EXISTS " + schema.Sanitize() + " CASCADE"); err != nil {
			t.Error(err)
		}
	})
	s, err := postgres.Open(t.Context(), url, &postgres.Config{Schema: schema[0]})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s
}

// receiptOf is the "receipt" member of an execution's body, as served.
func receiptOf(t *testing.T, body []byte) string {
	t.Helper()
	var e struct {
		Receipt json.RawMessage `json:"receipt"`
	}
	require.NoError(t, json.Unmarshal(body, &e), "%s", body)
	require.NotEmpty(t, e.Receipt, "the body carries its receipt: %s", body)
	return string(e.Receipt)
}

// TestReceiptStoredOnceOverHTTP: on every store, a call's answer, the
// replay of its key and GET of its execution are the same bytes, the
// receipt in them the one the chain lists; an ambiguous call replays as
// it answered, and once resolved its key and its execution give the
// resolution with the resolution's receipt, which the chain lists last.
func TestReceiptStoredOnceOverHTTP(t *testing.T) {
	t.Parallel()
	for _, st := range receiptStores {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			store := toolgatetest.NewDyingStore(st.open(t))
			store.Dying.Store(false)
			a := newAPI(t, store, func(c *toolgate.Config) {
				c.Approvers = toolgatetype.StaticApprovers{Approvers: map[string][]string{"dana": {"alice"}}}
			})
			require.NoError(t, a.keys.AddApproverKey("dana", danaKey))
			lastListed := func() string {
				t.Helper()
				page, _ := a.receipts(aliceKey, "?limit=100")
				require.NotEmpty(t, page.Receipts)
				return string(page.Receipts[len(page.Receipts)-1])
			}

			// A completed call.
			q := a.quote(aliceKey, "earthquake-search")
			first := a.call(aliceKey, "earthquake-search", "k-done", callBody(q, quakeInput))
			require.Equal(t, http.StatusOK, first.status, "%s", first.body)
			again := a.call(aliceKey, "earthquake-search", "k-done", callBody(q, quakeInput))
			require.Equal(t, http.StatusOK, again.status, "%s", again.body)
			assert.Equal(t, "true", again.header.Get("Idempotent-Replayed"))
			assert.Equal(t, string(first.body), string(again.body), "replayed byte for byte, receipt included")
			id := first.header.Get("Toolgate-Execution-Id")
			got := a.do("GET", "/v1/executions/"+id, aliceKey, "")
			require.Equal(t, http.StatusOK, got.status, "%s", got.body)
			assert.Equal(t, string(first.body), string(got.body))
			assert.Equal(t, lastListed(), receiptOf(t, first.body), "the receipt answered is the one listed")

			// An ambiguous call: its run dies, a retry after its lease
			// cannot tell whether the provider ran it.
			notSafe := false
			require.NoError(t, a.reg.SetTrust("goal-data", registry.Trust{RetrySafe: &notSafe}))
			gq := a.quote(aliceKey, "goal-data")
			input := `{"goal":"g","step":1}`
			store.Dying.Store(true)
			r := a.call(aliceKey, "goal-data", "k-amb", callBody(gq, input))
			require.Equal(t, http.StatusInternalServerError, r.status, "%s", r.body)
			store.Dying.Store(false)
			a.clock.Advance(toolgate.DefaultIdempotencyLease + toolgate.DefaultQuoteTTL)
			amb := a.call(aliceKey, "goal-data", "k-amb", callBody(gq, input))
			require.Equal(t, http.StatusOK, amb.status, "%s", amb.body)
			require.Equal(t, "ambiguous", amb.json(t)["status"])
			ambID := amb.header.Get("Toolgate-Execution-Id")
			replayed := a.call(aliceKey, "goal-data", "k-amb", callBody(gq, input))
			assert.Equal(t, string(amb.body), string(replayed.body), "the ambiguous call replays byte for byte")
			assert.Equal(t, lastListed(), receiptOf(t, amb.body))

			resolved := a.do("POST", "/v1/executions/"+ambID+"/resolve", danaKey, `{"outcome":"completed"}`)
			require.Equal(t, http.StatusOK, resolved.status, "%s", resolved.body)
			assert.Equal(t, lastListed(), receiptOf(t, resolved.body), "the resolution has its own receipt")
			assert.NotEqual(t, receiptOf(t, amb.body), receiptOf(t, resolved.body))
			replayed = a.call(aliceKey, "goal-data", "k-amb", callBody(gq, input))
			require.Equal(t, http.StatusOK, replayed.status, "%s", replayed.body)
			assert.Equal(t, string(resolved.body), string(replayed.body), "the key replays the resolution byte for byte")
			got = a.do("GET", "/v1/executions/"+ambID, aliceKey, "")
			assert.Equal(t, string(resolved.body), string(got.body))
		})
	}
}
