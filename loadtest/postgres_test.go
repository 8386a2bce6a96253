package loadtest

import (
	"context"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/shopspring/decimal"
)

// urlEnv names the variable that points the tests at a PostgreSQL server,
// as for storage/postgres.
const urlEnv = "TOOLGATE_TEST_POSTGRES_URL"

const pgTimeout = 30 * time.Second

// postgresURL returns the server to test against. Without one the tests
// skip, except in CI, where a silently skipped backend would look green; so
// does a server that is not on this machine, since the load must stay on
// the loopback interface.
func postgresURL(t *testing.T) string {
	t.Helper()
	skip := func(format string, args ...any) {
		t.Helper()
		if os.Getenv("CI") == "true" {
			t.Fatalf(format+"; CI must run the PostgreSQL load tests", args...)
		}
		t.Skipf(format+"; skipping the PostgreSQL load tests", args...)
	}
	raw := os.Getenv(urlEnv)
	if raw == "" {
		skip("%s is not set (e.g. %s=postgres://postgres@127.0.0.1:5432/test?sslmode=disable)", urlEnv, urlEnv)
	}
	if !strings.HasPrefix(raw, "postgres://") && !strings.HasPrefix(raw, "postgresql://") {
		skip("%s is not a postgres:// URL, which the server's config needs", urlEnv)
	}
	cfg, err := pgconn.ParseConfig(raw)
	if err != nil {
		t.Fatalf("%s: %v", urlEnv, err)
	}
	hosts := []string{cfg.Host}
	for _, fb := range cfg.Fallbacks {
		hosts = append(hosts, fb.Host)
	}
	for _, h := range hosts {
		if !strings.HasPrefix(h, "/") && h != "127.0.0.1" && h != "::1" && h != "localhost" {
			skip("%s names host %q, and the load must stay on this machine", urlEnv, h)
		}
	}
	return raw
}

// newDatabase creates a database for one test, dropped when it ends, and
// returns its URL: the server keeps its tables in the public schema of the
// database it is given, so a database of its own is what isolates a run.
// Where the role may not create databases, the given database is used: the
// run's principals are its own, and every check here filters by them.
func newDatabase(t *testing.T, base string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), pgTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connect to the server in %s: %v", urlEnv, err)
	}
	defer conn.Close(ctx)
	name := "toolgate_load_" + randomHex(t, 6)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Logf("cannot create a database (%v): using the one in %s", err, urlEnv)
		return base
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), pgTimeout)
		defer cancel()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Errorf("drop database %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		// The server has exited and closed its pool, so the plain form
		// works too where WITH (FORCE) (PostgreSQL 13) is not understood.
		drop := "DROP DATABASE IF EXISTS " + pgx.Identifier{name}.Sanitize()
		if _, err := conn.Exec(ctx, drop+" WITH (FORCE)"); err != nil {
			if _, err := conn.Exec(ctx, drop); err != nil {
				t.Errorf("drop database %s: %v", name, err)
			}
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("%s: %v", urlEnv, err)
	}
	u.Path = "/" + name
	u.RawPath = ""
	return u.String()
}

// ledger reads what the server stored, straight from its tables (the
// public schema; see storage/postgres/migrations), for the run's
// principals only.
type ledger struct {
	t          *testing.T
	url        string
	principals []string
}

func newLedger(t *testing.T, url string, r *rig) *ledger {
	l := &ledger{t: t, url: url}
	for _, p := range r.principals {
		l.principals = append(l.principals, p.id)
	}
	return l
}

// count runs a count(*) query whose $1 is the run's principals.
func (l *ledger) count(query string) int64 {
	l.t.Helper()
	var n int64
	l.query(func(ctx context.Context, conn *pgx.Conn) error {
		return conn.QueryRow(ctx, query, l.principals).Scan(&n)
	})
	return n
}

func (l *ledger) query(f func(ctx context.Context, conn *pgx.Conn) error) {
	l.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), pgTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, l.url)
	if err != nil {
		l.t.Fatalf("connect to the run's database: %v", err)
	}
	defer conn.Close(ctx)
	if err := f(ctx, conn); err != nil {
		l.t.Fatalf("query the run's database: %v", err)
	}
}

// spendEntries is every call the limits count, with its reservation's
// state: an execution's is read from the execution (reserved while running
// or ambiguous), until Prune moves it into the spend_ledger archive.
const spendEntries = `(SELECT principal, amount_usd,
		CASE WHEN status IN ('running', 'ambiguous') THEN 'reserved' WHEN charged THEN 'charged' ELSE 'released' END AS state
	FROM public.executions WHERE counted
	UNION ALL
	SELECT principal, amount_usd, state FROM public.spend_ledger) AS entries`

// unfinished counts what a clean stop or a finished run must not leave:
// idempotency records still running, executions still running, and spend
// still reserved.
func (l *ledger) unfinished() (records, executions, reserved int64) {
	records = l.count(`SELECT count(*) FROM public.idempotency_records WHERE NOT finished AND principal = ANY($1)`)
	executions = l.count(`SELECT count(*) FROM public.executions WHERE status = 'running' AND principal = ANY($1)`)
	reserved = l.count(`SELECT count(*) FROM ` + spendEntries + ` WHERE state = 'reserved' AND principal = ANY($1)`)
	return
}

// charged sums the charged spend per principal.
func (l *ledger) charged() map[string]decimal.Decimal {
	l.t.Helper()
	out := map[string]decimal.Decimal{}
	l.query(func(ctx context.Context, conn *pgx.Conn) error {
		rows, err := conn.Query(ctx, `SELECT principal, sum(amount_usd)::text FROM `+spendEntries+`
			WHERE state = 'charged' AND principal = ANY($1) GROUP BY principal`, l.principals)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var p, sum string
			if err := rows.Scan(&p, &sum); err != nil {
				return err
			}
			d, err := decimal.NewFromString(sum)
			if err != nil {
				return err
			}
			out[p] = d
		}
		return rows.Err()
	})
	return out
}

// checkStore compares the store with what the callers saw: nothing left
// running, no key with two executions, one charged execution per completed
// call seen, and the charged spend per principal equal to theirs.
func checkStore(l *load, db *ledger, calls []*call) {
	t := l.r.t
	records, executions, reserved := db.unfinished()
	if records+executions+reserved > 0 {
		t.Errorf("the store holds %d unfinished idempotency records, %d running executions and %d reserved amounts after the run", records, executions, reserved)
	}
	if n := db.count(`SELECT count(*) FROM (SELECT 1 FROM public.executions WHERE principal = ANY($1)
		GROUP BY principal, idempotency_key HAVING count(*) > 1) twice`); n > 0 {
		t.Errorf("%d keys have more than one execution in the store", n)
	}
	completed := map[string]decimal.Decimal{}
	var nCompleted int64
	for _, c := range calls {
		if c.status == "completed" {
			nCompleted++
			completed[c.p.id] = completed[c.p.id].Add(c.totalUSD)
		}
	}
	if n := db.count(`SELECT count(*) FROM public.executions WHERE charged AND principal = ANY($1)`); n != nCompleted {
		t.Errorf("the store charged %d executions; the callers saw %d completed", n, nCompleted)
	}
	charged := db.charged()
	for _, p := range l.r.principals {
		if got, want := charged[p.id], completed[p.id]; !got.Equal(want) {
			t.Errorf("%s: the ledger charged %s, the completed executions total %s", p.id, got.StringFixed(4), want.StringFixed(4))
		}
	}
}
