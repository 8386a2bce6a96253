package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// maxBatch is how many writes one transaction holds at most, so that a
// burst never keeps the file's write lock, which another process may be
// waiting for, for long.
const maxBatch = 64

// writer runs every write of a Store, one at a time, on one connection.
// That is what keeps each write's checks and changes atomic within the
// process; BEGIN IMMEDIATE, which takes the file's write lock before the
// first read, keeps them atomic against other processes on the same file.
//
// A write runs in its own savepoint inside a transaction that the writer
// shares between the writes queued at the time (group commit): the
// transaction commits, and waits for the disk, once for all of them. Each
// write still succeeds or fails alone: one that fails is rolled back to its
// savepoint and the others commit. A write alone in its transaction needs
// no savepoint: the transaction is rolled back if it fails. Its caller hears of it only once the
// transaction has committed, so a write reported done is on disk, and one
// reported failed left nothing behind.
type writer struct {
	conn *sql.Conn
	// stmts caches the statements prepared on conn. Only the writer's
	// goroutine uses it.
	stmts map[string]*sql.Stmt
	// users holds tool_users rows known to be in the file, and foundUsers
	// those the current transaction found, known once it commits (see
	// countUse). Only the writer's goroutine uses them.
	users      map[toolUser]struct{}
	foundUsers []toolUser

	// ops is unbuffered: a write is handed over only to a writer that is
	// there to take it, so none is stranded by Close.
	ops chan *writeOp
	// observe, when set, hears each transaction's number of writes (see
	// Store.ObserveBatches).
	observe   atomic.Pointer[func(int)]
	closing   chan struct{}
	closeOnce sync.Once
	done      chan struct{} // closed when the goroutine has ended
}

// writeOp is one write waiting for, or being run by, the writer.
type writeOp struct {
	ctx    context.Context
	fn     func(tx *writeTx) error
	state  atomic.Int32
	result chan error // buffered: the writer never waits for the caller
}

// A writeOp's states. The writer and a caller whose context ends race to
// move a queued write on, so exactly one of "ran" and "gave up" happens.
const (
	opQueued int32 = iota
	opRunning
	opAbandoned
)

func newWriter(conn *sql.Conn) *writer {
	w := &writer{
		conn:    conn,
		stmts:   make(map[string]*sql.Stmt),
		users:   make(map[toolUser]struct{}),
		ops:     make(chan *writeOp),
		closing: make(chan struct{}),
		done:    make(chan struct{}),
	}
	go w.run()
	return w
}

// do runs fn as one atomic write and returns its error, or the commit's.
// fn must not keep tx, and must not block on anything but the database.
// When ctx ends before the write has started, do returns ctx's error and
// the write never runs; once started, it runs to its end and do reports
// its outcome, so an error always means nothing was written.
func (w *writer) do(ctx context.Context, fn func(tx *writeTx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	op := &writeOp{ctx: ctx, fn: fn, result: make(chan error, 1)}
	select {
	case w.ops <- op:
	case <-ctx.Done():
		return ctx.Err()
	case <-w.closing:
		return ErrClosed
	}
	select {
	case err := <-op.result:
		return err
	case <-ctx.Done():
		if op.state.CompareAndSwap(opQueued, opAbandoned) {
			return ctx.Err()
		}
		return <-op.result // started: its outcome is moments away
	}
}

// close stops the writer once the writes it has taken are done; writes
// after that fail with ErrClosed.
func (w *writer) close() error {
	w.closeOnce.Do(func() { close(w.closing) })
	<-w.done
	var errs []error
	for _, st := range w.stmts {
		errs = append(errs, st.Close())
	}
	errs = append(errs, w.conn.Close())
	return errors.Join(errs...)
}

func (w *writer) run() {
	defer close(w.done)
	batch := make([]*writeOp, 0, maxBatch)
	for {
		select {
		case op := <-w.ops:
			batch = append(batch[:0], op)
		case <-w.closing:
			return
		}
		// Every write already waiting joins this transaction. There is no
		// waiting for more: while this one commits, the next batch queues.
	gather:
		for len(batch) < maxBatch {
			select {
			case op := <-w.ops:
				batch = append(batch, op)
			default:
				break gather
			}
		}
		w.commit(batch)
		clear(batch) // let the finished writes be collected
	}
}

// commit runs batch in one transaction and tells each caller its outcome.
func (w *writer) commit(batch []*writeOp) {
	live := make([]*writeOp, 0, len(batch))
	for _, op := range batch {
		// A caller that gave up before its write started is no longer
		// waiting, and was told nothing was written.
		if op.state.CompareAndSwap(opQueued, opRunning) {
			live = append(live, op)
		}
	}
	if len(live) == 0 {
		return
	}
	if o := w.observe.Load(); o != nil {
		(*o)(len(live))
	}
	results := make([]error, len(live))
	tx := &writeTx{w: w}
	if err := tx.exec0("BEGIN IMMEDIATE"); err != nil {
		w.reply(live, results, translate(err))
		return
	}
	if len(live) == 1 {
		w.commitOne(tx, live[0])
		return
	}
	for i, op := range live {
		if err := op.ctx.Err(); err != nil {
			results[i] = err
			continue
		}
		err, broken := w.runOne(tx, op)
		if broken != nil {
			// The transaction itself failed (SQLite rolls back the whole
			// transaction on some errors, such as a full disk): nothing of
			// the batch is kept, so every write in it failed.
			w.rollback(tx)
			w.reply(live, results, broken)
			return
		}
		results[i] = err
	}
	if err := tx.exec0("COMMIT"); err != nil {
		w.rollback(tx)
		w.reply(live, results, translate(err))
		return
	}
	w.knowUsers()
	w.reply(live, results, nil)
}

// commitOne runs a batch of one write, in the transaction commit has
// begun. It needs no savepoint: should the write fail, rolling back the
// transaction undoes it alone. A caller alone in its batch, as every
// caller is when calls come one at a time, so pays for two statements
// fewer.
func (w *writer) commitOne(tx *writeTx, op *writeOp) {
	err := op.ctx.Err()
	if err == nil {
		err = op.fn(tx)
	}
	if err == nil {
		if err = tx.exec0("COMMIT"); err != nil {
			err = translate(err)
		}
	}
	if err != nil {
		w.rollback(tx)
		op.result <- err
		return
	}
	w.knowUsers()
	op.result <- nil
}

// knowUsers keeps what the committed transaction found of tool_users.
// Bounded: forgetting them costs an insert that finds the row again.
func (w *writer) knowUsers() {
	for _, u := range w.foundUsers {
		if len(w.users) >= maxKnownUsers {
			clear(w.users)
		}
		w.users[u] = struct{}{}
	}
	w.foundUsers = w.foundUsers[:0]
}

// runOne runs one write in its own savepoint. err is the write's own
// failure, after which its changes are undone and the batch goes on;
// broken is a failure of the transaction, after which it cannot.
func (w *writer) runOne(tx *writeTx, op *writeOp) (err, broken error) {
	if err := tx.exec0("SAVEPOINT write"); err != nil {
		return nil, translate(err)
	}
	err = op.fn(tx)
	if err != nil {
		if rerr := tx.exec0("ROLLBACK TO write"); rerr != nil {
			return nil, fmt.Errorf("%w (rolling back after: %v)", translate(rerr), err)
		}
	}
	if rerr := tx.exec0("RELEASE write"); rerr != nil {
		return nil, translate(rerr)
	}
	return err, nil
}

// rollback ends a failed transaction. SQLite may have rolled it back
// already, in which case ROLLBACK fails harmlessly.
func (w *writer) rollback(tx *writeTx) {
	_ = tx.exec0("ROLLBACK")
	w.foundUsers = w.foundUsers[:0]
}

// reply tells each caller its outcome: fail, when set, for every write
// that had succeeded (it was not committed), else its own result.
func (w *writer) reply(ops []*writeOp, results []error, fail error) {
	for i, op := range ops {
		err := results[i]
		if err == nil {
			err = fail
		}
		op.result <- err
	}
}

// writeTx is what a write sees: statements on the writer's connection,
// inside the current transaction. They run with no context of their own:
// interrupting a statement would roll back the whole shared transaction,
// and a write, once started, is short and runs to its end.
type writeTx struct {
	w *writer
}

// stmt returns query prepared on the writer's connection, preparing it on
// first use.
func (tx *writeTx) stmt(query string) (*sql.Stmt, error) {
	if st, ok := tx.w.stmts[query]; ok {
		return st, nil
	}
	st, err := tx.w.conn.PrepareContext(context.Background(), query)
	if err != nil {
		return nil, err
	}
	tx.w.stmts[query] = st
	return st, nil
}

// exec runs a statement and returns how many rows it changed.
func (tx *writeTx) exec(query string, args ...any) (int64, error) {
	st, err := tx.stmt(query)
	if err != nil {
		return 0, translate(err)
	}
	res, err := st.Exec(args...)
	if err != nil {
		return 0, translate(err)
	}
	n, err := res.RowsAffected()
	return n, translate(err)
}

// exec0 runs a statement whose row count does not matter, untranslated.
func (tx *writeTx) exec0(query string) error {
	st, err := tx.stmt(query)
	if err != nil {
		return err
	}
	_, err = st.Exec()
	return err
}

// queryRow runs a query expected to return at most one row.
func (tx *writeTx) queryRow(query string, args ...any) scanner {
	st, err := tx.stmt(query)
	if err != nil {
		return errRow{err}
	}
	return st.QueryRow(args...)
}

// query runs a query; the caller closes the rows.
func (tx *writeTx) query(query string, args ...any) (*sql.Rows, error) {
	st, err := tx.stmt(query)
	if err != nil {
		return nil, translate(err)
	}
	rows, err := st.Query(args...)
	return rows, translate(err)
}
