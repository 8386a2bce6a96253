package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/testproc"
	"github.com/toolgate/toolgate/storage/postgres"
)

// killSchemaEnv names the schema a kill test's child admits calls in.
const killSchemaEnv = "TOOLGATE_TEST_KILL_SCHEMA"

// killLine is one line of the child's output: a call it is about to
// admit, or one it was told was admitted.
type killLine struct {
	Event     string `json:"event"` // "try", "admitted" or "batch"
	Principal string `json:"principal,omitempty"`
	Key       string `json:"key,omitempty"`
	Quote     string `json:"quote,omitempty"`
	Size      int    `json:"size,omitempty"`
}

// TestKillBatchChild is the child of TestKillWithABatchInFlight: it admits
// calls from 32 goroutines at once, as fast as it can, until it is killed.
func TestKillBatchChild(t *testing.T) {
	schema := os.Getenv(killSchemaEnv)
	if schema == "" {
		t.Skip("the child of TestKillWithABatchInFlight")
	}
	ctx := context.Background()
	s, err := postgres.Open(ctx, testURL(t), &postgres.Config{Schema: schema})
	require.NoError(t, err)
	report := testproc.JSONLines(os.Stdout)
	say := func(l killLine) { report(l) }
	s.ObserveBatches(func(op string, n int) {
		if op == "admit" && n > 1 {
			say(killLine{Event: "batch", Size: n})
		}
	})
	var wg sync.WaitGroup
	for g := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				q := testQuote(fmt.Sprintf("p%d", g%8), "tool-a", "0.01", t0)
				if err := s.CreateQuote(ctx, q); err != nil {
					t.Error(err)
					return
				}
				b := testBegin(q, fmt.Sprintf("k%d-%d", g, n), t0)
				say(killLine{Event: "try", Principal: b.Principal, Key: b.Key, Quote: q.ID.String()})
				if _, err := s.BeginExecution(ctx, b); err != nil {
					t.Error(err)
					return
				}
				say(killLine{Event: "admitted", Principal: b.Principal, Key: b.Key})
			}
		}()
	}
	wg.Wait()
}

// A gateway killed (SIGKILL) while batches of admissions are in flight
// leaves each call of a batch either admitted, with its quote used and
// counted in the rollups, and recoverable by a retry of its key once its
// lease ends, or absent, its quote still open: never half of one, and
// never a call its caller was told was admitted missing.
func TestKillWithABatchInFlight(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	schema := newSchema(t)
	s := openInstance(t, schema) // migrates before the child starts

	var lines []killLine
	admitted, batches := 0, 0
	testproc.KillChild(t, "TestKillBatchChild", []string{killSchemaEnv + "=" + schema}, func(line []byte) bool {
		var l killLine
		require.NoError(t, json.Unmarshal(line, &l))
		lines = append(lines, l)
		switch l.Event {
		case "admitted":
			admitted++
		case "batch":
			batches++
		}
		return admitted >= 600 && batches >= 20
	})
	require.GreaterOrEqual(t, batches, 20, "the child batched its admissions")

	quotes := map[string]string{} // key -> quote
	told := map[string]bool{}
	var keys []killLine
	for _, l := range lines {
		switch l.Event {
		case "try":
			quotes[l.Key] = l.Quote
			keys = append(keys, l)
		case "admitted":
			told[l.Key] = true
		}
	}
	var running, absent int
	later := t0.Add(2 * time.Minute) // every lease has ended
	for _, k := range keys {
		var executions, used int
		require.NoError(t, sharedPool(t).QueryRow(ctx, fmtSchema(`
			SELECT (SELECT count(*) FROM {schema}.executions WHERE principal = $1 AND idempotency_key = $2),
				(SELECT count(*) FROM {schema}.quotes WHERE id = $3::uuid AND state = 'used')`, schema),
			k.Principal, k.Key, k.Quote).Scan(&executions, &used))
		require.Equal(t, executions, used, "call %s: admitted with its quote used, or neither", k.Key)
		if executions == 0 {
			assert.False(t, told[k.Key], "call %s was reported admitted but is not in the database", k.Key)
			absent++
			continue
		}
		running++
		// Recoverable: a retry of the key takes the abandoned run over.
		q, err := s.GetQuote(ctx, uuid.MustParse(k.Quote))
		require.NoError(t, err)
		retry := testBegin(q, k.Key, later)
		res, err := s.BeginExecution(ctx, retry)
		require.NoError(t, err, "retry of %s", k.Key)
		assert.True(t, res.TookOver, "retry of %s takes the admitted call over", k.Key)
	}
	t.Logf("after the kill: %d calls admitted, %d absent, %d batches of more than one seen", running, absent, batches)
	assertRollupsExact(t, schema)
}
