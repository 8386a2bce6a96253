package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRunMemory runs every phase briefly, so the tool keeps working; the
// figures themselves are BENCHMARKS.md's business, not a test's.
func TestRunMemory(t *testing.T) {
	var out bytes.Buffer
	err := run(context.Background(), config{duration: 200 * time.Millisecond, slice: 100 * time.Millisecond, warmup: 20 * time.Millisecond, clients: 2, store: "memory", memory: true}, &out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{"direct ", "memory ", "pairs/s ÷ direct/s (memory)", "RSS: "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestRunPostgres adds the PostgreSQL phase when a server is configured,
// as for the storage/postgres tests.
func TestRunPostgres(t *testing.T) {
	url := os.Getenv("TOOLGATE_TEST_POSTGRES_URL")
	if url == "" {
		t.Skip("TOOLGATE_TEST_POSTGRES_URL is not set")
	}
	var out bytes.Buffer
	err := run(context.Background(), config{duration: 200 * time.Millisecond, slice: 100 * time.Millisecond, warmup: 20 * time.Millisecond, clients: 2, store: url, memory: true}, &out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "pairs/s postgres ÷ memory") {
		t.Errorf("no PostgreSQL figures:\n%s", out.String())
	}
	// The database's work per pair, counted on the wire and by the server.
	// Whatever the server's configuration, a pair is at least a quote and a
	// call: a round trip each, and the writes that admit and finish a call.
	report := out.String()
	require.Contains(t, report, "database work per pair")
	roundTrips := perPair(t, report, "round trips")
	require.GreaterOrEqual(t, roundTrips, 2.0, report)
	require.Less(t, roundTrips, 10.0, report)
	require.GreaterOrEqual(t, perPair(t, report, "transactions committed"), 2.0, report)
	require.Greater(t, perPair(t, report, "rows inserted"), 1.0, report)
	require.Regexp(t, `(?m)^\s+executions\s+1\.00\s`, report, "one execution inserted per pair")
	// The principal's admission lock is taken on its row without writing a
	// new version of it (only each principal's first admission inserts).
	require.Regexp(t, `(?m)^\s+principal_locks\s+[0-9.]+\s+0\.00\s`, report, "the admission lock updated no row")
	require.Contains(t, report, "call: reads and admission")
}

// perPair reads the figure printed after label in the database work report.
func perPair(t *testing.T, report, label string) float64 {
	t.Helper()
	m := regexp.MustCompile(regexp.QuoteMeta(label) + `\s+([0-9.]+)`).FindStringSubmatch(report)
	require.NotNil(t, m, "no %q in\n%s", label, report)
	v, err := strconv.ParseFloat(m[1], 64)
	require.NoError(t, err)
	return v
}

// TestRunSQLite adds the SQLite phase on a new file, which it removes.
func TestRunSQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bench.db")
	var out bytes.Buffer
	err := run(context.Background(), config{duration: 200 * time.Millisecond, slice: 100 * time.Millisecond, warmup: 20 * time.Millisecond, clients: 2, store: "sqlite:" + path, memory: true}, &out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{"sqlite ", "pairs/s ÷ direct/s (sqlite)", "pairs/s sqlite ÷ memory: "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the benchmark's file is left behind: %v", err)
	}
	// A file that exists is someone's: the benchmark refuses it.
	if err := os.WriteFile(path, []byte("data"), 0o600); err != nil {
		t.Fatal(err)
	}
	err = run(context.Background(), config{duration: 100 * time.Millisecond, slice: 100 * time.Millisecond, clients: 1, store: "sqlite:" + path, memory: true}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "the file exists") {
		t.Errorf("an existing file: err %v", err)
	}
}

func TestFlags(t *testing.T) {
	cases := []struct {
		args []string
		ok   bool
	}{
		{nil, true},
		{[]string{"-duration", "1s", "-clients", "4"}, true},
		{[]string{"-store", "postgres://u@h/db"}, true},
		{[]string{"-store", "mysql://x"}, false},
		{[]string{"-clients", "0"}, false},
		{[]string{"extra"}, false},
		{[]string{"-memory=false"}, false},
		{[]string{"-memory=false", "-store", "postgres://u@h/db"}, true},
		{[]string{"-store", "sqlite:data/bench.db"}, true},
		{[]string{"-store", "sqlite:"}, false},
		{[]string{"-memory=false", "-store", "sqlite:bench.db"}, true},
	}
	for _, c := range cases {
		_, err := parseFlags(c.args, io.Discard)
		if (err == nil) != c.ok {
			t.Errorf("%q: err %v, want ok %t", c.args, err, c.ok)
		}
	}
	cfg, _ := parseFlags([]string{"-duration", "1s"}, io.Discard)
	if cfg.warmup != 100*time.Millisecond {
		t.Errorf("warm-up for 1s is %s, want 100ms", cfg.warmup)
	}
}

func TestHistogram(t *testing.T) {
	var h histogram
	if h.percentile(0.5) != 0 {
		t.Error("an empty histogram has no median")
	}
	for d := time.Duration(1); d <= 100_000; d++ {
		h.add(d * time.Microsecond)
	}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 50 * time.Millisecond}, {0.99, 99 * time.Millisecond}, {1, 100 * time.Millisecond}} {
		got := h.percentile(c.q)
		if got < c.want || float64(got) > float64(c.want)*1.04 {
			t.Errorf("p%v = %s, want %s to 4%% above", c.q*100, got, c.want)
		}
	}
	for _, d := range []time.Duration{0, 1, 31, 32, 33, 63, 64, 1000, 1 << 40} {
		if b := bucket(d); upper(b) < d || bucket(upper(b)) != b || bucket(upper(b)+1) == b {
			t.Errorf("%d falls in bucket %d, whose upper end is %d", d, b, upper(b))
		}
	}
}
