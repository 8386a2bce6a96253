package sqlite_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/testproc"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/storage/sqlite"
)

// killFileEnv names the file a kill test's child admits and finishes
// calls in.
const killFileEnv = "TOOLGATE_TEST_SQLITE_KILL_FILE"

// killLine is one line of the child's output: a call it is about to
// admit, one it was told was admitted, one it was told was finished, or a
// transaction of more than one write.
type killLine struct {
	Event string `json:"event"` // "try", "admitted", "finished" or "batch"
	Key   string `json:"key,omitempty"`
	Quote string `json:"quote,omitempty"`
	Size  int    `json:"size,omitempty"`
}

// TestKillSQLiteChild is the child of TestKillWithWritesInOneTransaction.
func TestKillSQLiteChild(t *testing.T) {
	path := os.Getenv(killFileEnv)
	if path == "" {
		t.Skip("the child of TestKillWithWritesInOneTransaction")
	}
	ctx := context.Background()
	s, err := sqlite.Open(ctx, path, nil)
	require.NoError(t, err)
	report := testproc.JSONLines(os.Stdout)
	say := func(l killLine) { report(l) }
	s.ObserveBatches(func(_ string, n int) {
		if n > 1 {
			say(killLine{Event: "batch", Size: n})
		}
	})
	var wg sync.WaitGroup
	for g := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				q := quoteFor(fmt.Sprintf("p%d", g%4), "tool-a", "0.01", t0)
				if err := s.CreateQuote(ctx, q); err != nil {
					t.Error(err)
					return
				}
				b := beginFor(q, fmt.Sprintf("k%d-%d", g, n), t0)
				say(killLine{Event: "try", Key: b.Key, Quote: q.ID.String()})
				if _, err := s.BeginExecution(ctx, b); err != nil {
					t.Error(err)
					return
				}
				say(killLine{Event: "admitted", Key: b.Key})
				if err := s.FinishExecution(ctx, finishFor(b, storage.ExecutionCompleted, `{"ok":true}`, t0)); err != nil {
					t.Error(err)
					return
				}
				say(killLine{Event: "finished", Key: b.Key})
			}
		}()
	}
	wg.Wait()
}

// A gateway killed (SIGKILL) while its writer commits transactions of
// many writes leaves each write whole or absent: every call admitted with
// its quote used, or absent with its quote open; every call its caller
// was told was admitted, or finished, is so in the file.
func TestKillWithWritesInOneTransaction(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "killed.db")
	openStore(t, path) // creates and migrates the file before the child starts

	var lines []killLine
	finished, batches := 0, 0
	testproc.KillChild(t, "TestKillSQLiteChild", []string{killFileEnv + "=" + path}, func(line []byte) bool {
		var l killLine
		require.NoError(t, json.Unmarshal(line, &l))
		lines = append(lines, l)
		switch l.Event {
		case "finished":
			finished++
		case "batch":
			batches++
		}
		return finished >= 400 && batches >= 20
	})
	require.GreaterOrEqual(t, batches, 20, "the child's writes shared transactions")

	s := openStore(t, path)
	ctx := t.Context()
	told := map[string]string{} // key: what the child was told last
	var tries []killLine
	for _, l := range lines {
		switch l.Event {
		case "try":
			tries = append(tries, l)
		case "admitted", "finished":
			told[l.Key] = l.Event
		}
	}
	admitted, absent := 0, 0
	for _, k := range tries {
		q, err := s.GetQuote(ctx, uuid.MustParse(k.Quote))
		require.NoError(t, err, "quote of %s", k.Key)
		rec, err := s.GetIdempotency(ctx, q.Principal, k.Key)
		if err != nil {
			require.ErrorIs(t, err, storage.ErrNotFound)
			assert.Equal(t, storage.QuoteOpen, q.State, "call %s is absent: its quote is still open", k.Key)
			assert.Empty(t, told[k.Key], "call %s was reported %s but is not in the file", k.Key, told[k.Key])
			absent++
			continue
		}
		admitted++
		assert.Equal(t, storage.QuoteUsed, q.State, "call %s is admitted: its quote is used", k.Key)
		if told[k.Key] == "finished" {
			assert.Equal(t, `{"ok":true}`, string(rec.Response), "call %s was reported finished", k.Key)
		}
	}
	t.Logf("after the kill: %d calls admitted, %d absent, %d transactions of more than one write seen", admitted, absent, batches)
	got, err := s.MeasureLimits(ctx, "p0", []storage.Limit{{Measure: storage.MeasureCalls, Since: t0.Add(-time.Hour)}})
	require.NoError(t, err)
	assert.Positive(t, got[0].IntPart(), "the file's limits count what it holds")
}
