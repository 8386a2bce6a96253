package sqlite

import (
	"context"
	"database/sql"
)

// Reads go to the read pool with statements prepared once per connection;
// writes go through the writer (writer.go). What both sides read, such as
// limits and executions, is written once against rowQuerier.

// scanner is a *sql.Row, a *sql.Rows or an errRow.
type scanner interface {
	Scan(dest ...any) error
}

// errRow is a row whose query could not even be prepared.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// rowQuerier runs a query expected to return at most one row: a writeTx,
// inside a write, or a readQuerier, on the read pool. What is read both
// ways (limits, executions) is written once against it.
type rowQuerier interface {
	queryRow(query string, args ...any) scanner
}

// readQuerier is a rowQuerier on the read pool.
type readQuerier struct {
	s   *Store
	ctx context.Context
}

func (r readQuerier) queryRow(query string, args ...any) scanner {
	st, ctx, err := r.s.read(r.ctx, query)
	if err != nil {
		return errRow{err}
	}
	return st.QueryRowContext(ctx, args...)
}

// read returns query prepared on the read pool, preparing it on first use,
// and the context to run it with. ctx is checked first, but a read, once
// started, runs to its end: reads are short, and the driver would watch a
// context that can be cancelled from a goroutine of its own, per statement.
func (s *Store) read(ctx context.Context, query string) (*sql.Stmt, context.Context, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	ctx = context.WithoutCancel(ctx)
	if st, ok := s.reads.Load(query); ok {
		return st.(*sql.Stmt), ctx, nil
	}
	st, err := s.rdb.PrepareContext(ctx, query)
	if err != nil {
		return nil, nil, translate(err)
	}
	if prev, loaded := s.reads.LoadOrStore(query, st); loaded {
		_ = st.Close()
		return prev.(*sql.Stmt), ctx, nil
	}
	return st, ctx, nil
}

// readRow runs a query on the read pool and scans its one row into dest.
// No row is storage.ErrNotFound.
func (s *Store) readRow(ctx context.Context, query string, args []any, dest ...any) error {
	st, ctx, err := s.read(ctx, query)
	if err != nil {
		return err
	}
	return translate(st.QueryRowContext(ctx, args...).Scan(dest...))
}

// readRows runs a query on the read pool; the caller closes the rows.
func (s *Store) readRows(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, ctx, err := s.read(ctx, query)
	if err != nil {
		return nil, err
	}
	rows, err := st.QueryContext(ctx, args...)
	return rows, translate(err)
}
