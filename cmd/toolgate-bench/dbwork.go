package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// dbWork counts what the database does for the PostgreSQL phase, so that a
// pair's cost can be read off per statement, round trip, commit, row and
// WAL byte rather than guessed from its latency.
//
// Most of it comes from the server's cumulative statistics, read before the
// phase's pool opens and after it has closed: a backend reports its counts
// when it goes idle, at most once a second, and in full when it exits, so
// only a reading taken after its connections are gone is complete. The
// round trips and statements are counted on the pool's own connections
// (wire, below), and the server CPU of the pool's backends is read from
// /proc when the server runs on this machine. Every figure is divided by
// the pairs the phase completed, warm-up included, since the counts cover
// those too.
type dbWork struct {
	stats  *pgx.Conn // a connection of its own, outside the measured pool
	schema string
	app    string // the measured pool's application_name
	wire   wire
	store  *timedStore
	before dbSnapshot
	after  dbSnapshot
	// serverCPU is the CPU time of the pool's backends, summed when the
	// phase ends; -1 when /proc could not tell (a server elsewhere).
	serverCPU time.Duration
	pairs     int64
}

// dbSnapshot is one reading of the server's statistics.
type dbSnapshot struct {
	commits, rollbacks               int64
	inserted, updated, deleted       int64
	walRecords, walFPI, walBytes     int64
	walWrites, walSyncs              int64
	haveWAL                          bool
	tables                           map[string]tableCounts
	statements                       map[int64]statementCounts // by queryid
	haveStatements                   bool
	statementsWhyNot                 string
	blocksHit, blocksRead, tempBytes int64
	deadlocks, conflicts             int64
}

type tableCounts struct{ ins, upd, hot, del int64 }

type statementCounts struct {
	query  string
	calls  int64
	millis float64 // planning and execution
}

func openDBWork(ctx context.Context, url, schema, app string) (*dbWork, error) {
	// Parsed as the pool parses it, so that pool settings in the URL
	// (pool_max_conns) are not sent to the server as parameters.
	poolCfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	cfg := poolCfg.ConnConfig
	cfg.RuntimeParams["application_name"] = app + "-stats"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &dbWork{stats: conn, schema: schema, app: app, serverCPU: -1}, nil
}

func (w *dbWork) close() { _ = w.stats.Close(context.Background()) }

// waitForBackends waits until no backend of the measured pool is left, so
// that every count it made has reached the statistics.
func (w *dbWork) waitForBackends(ctx context.Context) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		var n int
		if err := w.stats.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, w.app).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			// A backend flushes its counts on its way out, before it
			// leaves pg_stat_activity; this reading's own transaction
			// then sees them once its snapshot of the statistics is new.
			_, err := w.stats.Exec(ctx, `SELECT pg_stat_clear_snapshot()`)
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d backends of the measured pool are still connected after 30s", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// snapshot reads the statistics the report compares.
func (w *dbWork) snapshot(ctx context.Context) (dbSnapshot, error) {
	var s dbSnapshot
	err := w.stats.QueryRow(ctx, `
		SELECT xact_commit, xact_rollback, tup_inserted, tup_updated, tup_deleted,
			blks_hit, blks_read, temp_bytes, deadlocks, conflicts
		FROM pg_stat_database WHERE datname = current_database()`).Scan(
		&s.commits, &s.rollbacks, &s.inserted, &s.updated, &s.deleted,
		&s.blocksHit, &s.blocksRead, &s.tempBytes, &s.deadlocks, &s.conflicts)
	if err != nil {
		return s, fmt.Errorf("pg_stat_database: %w", err)
	}
	// pg_stat_wal is PostgreSQL 14 and later.
	err = w.stats.QueryRow(ctx, `SELECT wal_records, wal_fpi, wal_bytes::bigint, wal_write, wal_sync FROM pg_stat_wal`).Scan(
		&s.walRecords, &s.walFPI, &s.walBytes, &s.walWrites, &s.walSyncs)
	s.haveWAL = err == nil
	s.tables = map[string]tableCounts{}
	rows, err := w.stats.Query(ctx, `
		SELECT relname, n_tup_ins, n_tup_upd, n_tup_hot_upd, n_tup_del
		FROM pg_stat_user_tables WHERE schemaname = $1`, w.schema)
	if err != nil {
		return s, fmt.Errorf("pg_stat_user_tables: %w", err)
	}
	for rows.Next() {
		var (
			name string
			c    tableCounts
		)
		if err := rows.Scan(&name, &c.ins, &c.upd, &c.hot, &c.del); err != nil {
			rows.Close()
			return s, err
		}
		s.tables[name] = c
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return s, err
	}
	s.statements, s.statementsWhyNot = w.statements(ctx)
	s.haveStatements = s.statementsWhyNot == ""
	return s, nil
}

// statements reads pg_stat_statements for this database, or says why it
// cannot: the module must be in shared_preload_libraries and the
// extension created in the database.
func (w *dbWork) statements(ctx context.Context) (map[int64]statementCounts, string) {
	var schema *string
	if err := w.stats.QueryRow(ctx, `
		SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
		WHERE e.extname = 'pg_stat_statements'`).Scan(&schema); err != nil || schema == nil {
		return nil, "the pg_stat_statements extension is not created in this database"
	}
	// total_plan_time is PostgreSQL 13 and later: on older servers the
	// query fails and the report says so.
	rows, err := w.stats.Query(ctx, `
		SELECT queryid, query, calls, total_exec_time + total_plan_time
		FROM `+pgx.Identifier{*schema}.Sanitize()+`.pg_stat_statements
		WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND queryid IS NOT NULL`)
	if err != nil {
		var why string
		if msg := err.Error(); strings.Contains(msg, "shared_preload_libraries") {
			why = "pg_stat_statements is not in shared_preload_libraries"
		} else {
			why = "pg_stat_statements: " + msg
		}
		return nil, why
	}
	defer rows.Close()
	out := map[int64]statementCounts{}
	for rows.Next() {
		var (
			id int64
			c  statementCounts
		)
		if err := rows.Scan(&id, &c.query, &c.calls, &c.millis); err != nil {
			return nil, "pg_stat_statements: " + err.Error()
		}
		// One queryid may come back once per user; they add up.
		prev := out[id]
		c.calls += prev.calls
		c.millis += prev.millis
		out[id] = c
	}
	if err := rows.Err(); err != nil {
		return nil, "pg_stat_statements: " + err.Error()
	}
	return out, ""
}

// readServerCPU sums the CPU time of the measured pool's backends, read
// from /proc, which works only when the server runs on this machine and
// its processes are visible to this one. It must run while they are
// connected.
func (w *dbWork) readServerCPU(ctx context.Context) {
	rows, err := w.stats.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE application_name = $1`, w.app)
	if err != nil {
		return
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil || len(pids) == 0 {
		return
	}
	var total time.Duration
	for _, pid := range pids {
		cpu, err := procCPU(int(pid))
		if err != nil {
			return // not this machine's process, or not ours to read
		}
		total += cpu
	}
	w.serverCPU = total
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat's CPU times: 100 on
// every Linux architecture Go supports.
const clockTicks = 100

// procCPU is a process's user and system CPU time from /proc/PID/stat.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name may hold spaces; the fields after it are fixed.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, errors.New("unreadable /proc stat")
	}
	f := strings.Fields(s[i+1:])
	// After ")": state is field 3 of the file; utime and stime are 14 and 15.
	if len(f) < 13 {
		return 0, errors.New("short /proc stat")
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, errors.New("unreadable /proc stat times")
	}
	return time.Duration(u+st) * time.Second / clockTicks, nil
}

// countPairs reads how many calls the phase made: one execution each.
func (w *dbWork) countPairs(ctx context.Context) error {
	return w.stats.QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier{w.schema, "executions"}.Sanitize()).Scan(&w.pairs)
}

// report prints the per-pair figures.
func (w *dbWork) report(out io.Writer) {
	if w.pairs == 0 {
		fmt.Fprintln(out, "database work: no pairs completed")
		return
	}
	n := float64(w.pairs)
	per := func(a, b int64) float64 { return float64(b-a) / n }
	b, a := w.before, w.after
	fmt.Fprintf(out, "database work per pair (PostgreSQL, %d pairs, warm-up included):\n", w.pairs)
	fmt.Fprintf(out, "  round trips %.2f   statements %.2f   bytes sent %.0f, received %.0f\n",
		float64(w.wire.trips.Load())/n, float64(w.wire.statements.Load())/n,
		float64(w.wire.sent.Load())/n, float64(w.wire.received.Load())/n)
	fmt.Fprintf(out, "  transactions committed %.2f, rolled back %.2f", per(b.commits, a.commits), per(b.rollbacks, a.rollbacks))
	if a.haveWAL && b.haveWAL {
		fmt.Fprintf(out, "   WAL flushes (fsync) %.3f, writes %.3f", per(b.walSyncs, a.walSyncs), per(b.walWrites, a.walWrites))
	}
	fmt.Fprintln(out)
	fmt.Fprintf(out, "  rows inserted %.2f, updated %.2f, deleted %.2f", per(b.inserted, a.inserted), per(b.updated, a.updated), per(b.deleted, a.deleted))
	if a.haveWAL && b.haveWAL {
		fmt.Fprintf(out, "   WAL %.0f bytes in %.2f records (%.3f full-page images)",
			per(b.walBytes, a.walBytes), per(b.walRecords, a.walRecords), per(b.walFPI, a.walFPI))
	}
	fmt.Fprintln(out)
	fmt.Fprintf(out, "  buffers hit %.1f, read %.2f   temp bytes %.0f   deadlocks %d\n",
		per(b.blocksHit, a.blocksHit), per(b.blocksRead, a.blocksRead), per(b.tempBytes, a.tempBytes), a.deadlocks-b.deadlocks)
	if w.serverCPU >= 0 {
		fmt.Fprintf(out, "  server CPU (the pool's backends) %s per pair\n", round(time.Duration(float64(w.serverCPU)/n)))
	} else {
		fmt.Fprintln(out, "  server CPU: not readable here (the server is not on this machine, or its processes are not visible)")
	}
	w.reportTables(out, n)
	if w.store != nil {
		w.store.report(out, n)
	}
	w.reportStatements(out, n)
}

// reportTables prints the row versions each table got per pair.
func (w *dbWork) reportTables(out io.Writer, n float64) {
	names := make([]string, 0, len(w.after.tables))
	for name := range w.after.tables {
		names = append(names, name)
	}
	sort.Strings(names)
	fmt.Fprintf(out, "  %-26s %9s %9s %9s %9s\n", "rows per pair, by table", "inserted", "updated", "HOT", "deleted")
	for _, name := range names {
		a, b := w.after.tables[name], w.before.tables[name]
		d := tableCounts{a.ins - b.ins, a.upd - b.upd, a.hot - b.hot, a.del - b.del}
		if d == (tableCounts{}) {
			continue
		}
		fmt.Fprintf(out, "  %-26s %9.2f %9.2f %9.2f %9.2f\n", name,
			float64(d.ins)/n, float64(d.upd)/n, float64(d.hot)/n, float64(d.del)/n)
	}
}

// reportStatements prints the statements the server spent its time on,
// most first, from pg_stat_statements when it is there.
func (w *dbWork) reportStatements(out io.Writer, n float64) {
	if !w.after.haveStatements || !w.before.haveStatements {
		why := w.after.statementsWhyNot
		if why == "" {
			why = w.before.statementsWhyNot
		}
		fmt.Fprintf(out, "  statements: %s, so the server's time per statement is not shown\n", why)
		return
	}
	var (
		ds    []statementCounts
		total float64
	)
	for id, a := range w.after.statements {
		b := w.before.statements[id]
		d := statementCounts{query: a.query, calls: a.calls - b.calls, millis: a.millis - b.millis}
		if d.calls <= 0 || strings.Contains(d.query, "pg_stat") || strings.Contains(d.query, "pg_extension") {
			continue // not the pool's work: this reader's own
		}
		total += d.millis
		ds = append(ds, d)
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i].millis > ds[j].millis })
	fmt.Fprintf(out, "  statements by server time (pg_stat_statements; planning and execution, not parsing, protocol or commit): %s per pair\n",
		round(time.Duration(total/n*float64(time.Millisecond))))
	fmt.Fprintf(out, "  %9s %10s %7s  %s\n", "per pair", "mean", "share", "statement")
	for i, d := range ds {
		if i == 12 {
			break
		}
		mean := time.Duration(d.millis / float64(d.calls) * float64(time.Millisecond))
		fmt.Fprintf(out, "  %9.2f %10s %6.1f%%  %s\n", float64(d.calls)/n, round(mean), 100*d.millis/total, statementLabel(d.query, w.schema))
	}
}

// statementLabel shortens a statement to one line that tells it apart.
func statementLabel(q, schema string) string {
	q = strings.ReplaceAll(q, pgx.Identifier{schema}.Sanitize()+".", "")
	q = strings.Join(strings.Fields(q), " ")
	if len(q) > 90 {
		q = q[:87] + "..."
	}
	return q
}

// wire counts what the measured pool's connections send and receive. A
// round trip is a write that follows a read (or opens the connection): a
// pipelined batch is one, however many statements it holds.
type wire struct {
	trips, statements, sent, received atomic.Int64
}

// dial is a pgx DialFunc that counts on each connection it opens.
func (w *wire) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	cc := &countingConn{Conn: c, w: w}
	cc.read.Store(true) // the first write opens a round trip
	return cc, nil
}

type countingConn struct {
	net.Conn
	w    *wire
	read atomic.Bool // the last transfer was a read
}

func (c *countingConn) Write(p []byte) (int, error) {
	if c.read.Swap(false) {
		c.w.trips.Add(1)
	}
	n, err := c.Conn.Write(p)
	c.w.sent.Add(int64(n))
	return n, err
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.read.Store(true)
		c.w.received.Add(int64(n))
	}
	return n, err
}

// The pool's tracer counts the statements: each query, and each statement
// of a batch.

func (w *wire) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	w.statements.Add(1)
	return ctx
}

func (w *wire) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (w *wire) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

func (w *wire) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {
	w.statements.Add(1)
}

func (w *wire) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

var (
	_ pgx.QueryTracer = (*wire)(nil)
	_ pgx.BatchTracer = (*wire)(nil)
)
