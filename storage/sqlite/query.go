package sqlite

import (
	"context"
	"database/sql"
)

// Reads go to the read pool with statements prepared once per connection;
// writes go through the writer (writer.go). What is read both inside a
// write and outside one (limits, executions, quotes) is written once
// against reader.

// scanner is a *sql.Row, a *sql.Rows or an errRow.
type scanner interface {
	Scan(dest ...any) error
}

// errRow is a row whose query could not even be prepared.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// reader runs queries: a *writeTx inside a write; a poolReader, one
// statement at a time on the read pool; a txReader, inside one read
// transaction (ReadBatch). Errors from query are translated; those of a
// row come from its Scan, which the caller translates.
type reader interface {
	queryRow(query string, args ...any) scanner
	query(query string, args ...any) (*sql.Rows, error)
}

// poolReader reads on the read pool, each statement on whichever
// connection is free.
type poolReader struct {
	s   *Store
	ctx context.Context
}

func (r poolReader) queryRow(query string, args ...any) scanner {
	st, ctx, err := r.s.read(r.ctx, query)
	if err != nil {
		return errRow{err}
	}
	return st.QueryRowContext(ctx, args...)
}

func (r poolReader) query(query string, args ...any) (*sql.Rows, error) {
	st, ctx, err := r.s.read(r.ctx, query)
	if err != nil {
		return nil, err
	}
	rows, err := st.QueryContext(ctx, args...)
	return rows, translate(err)
}

// pool returns a reader on the read pool.
func (s *Store) pool(ctx context.Context) poolReader { return poolReader{s, ctx} }

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
