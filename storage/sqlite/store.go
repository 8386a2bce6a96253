package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver

	"github.com/toolgate/toolgate/storage"
)

// Interface guards.
var _ storage.Store = (*Store)(nil)

// walSizeLimit is the size the write-ahead log is cut back to once it has
// been checkpointed, so that a burst that grew it does not leave it large.
const walSizeLimit = 64 << 20

// Store is a storage.Store kept in one SQLite file. Writes go one at a time
// through one connection (see writer), reads through a small pool of their
// own; any number of Stores, in this process or others on the same
// machine, may open the same file.
type Store struct {
	path  string
	w     *writer
	wdb   *sql.DB  // the writer's connection's pool, of one
	rdb   *sql.DB  // the read pool
	reads sync.Map // query -> *sql.Stmt prepared on rdb

	closeOnce sync.Once
	closeErr  error
}

// Open opens the SQLite database at path, a file path (not a URI), creating
// the file if it does not exist and creating or upgrading its tables. The
// directory must exist. A new file is created readable by its owner only:
// it holds every caller's results.
//
// Close releases the file. Several processes may open the same file: their
// writes take turns on its write lock, waiting up to cfg.BusyTimeout.
func Open(ctx context.Context, path string, cfg *Config) (*Store, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	abs, err := checkPath(path)
	if err != nil {
		return nil, err
	}
	s := &Store{path: abs}
	if err := s.open(ctx, cfg); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// checkPath makes path absolute and refuses what is not a file path, with
// an error that says what to do instead.
func checkPath(path string) (string, error) {
	switch {
	case path == "":
		return "", errors.New("sqlite: the database path is empty")
	case path == ":memory:" || strings.HasPrefix(path, "file:"):
		return "", fmt.Errorf("sqlite: %q is not a file path (for a store that is not kept on disk, use storage/memory)", path)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("sqlite: database path %q: %w", path, err)
	}
	dir := filepath.Dir(abs)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("sqlite: the directory of %s does not exist", abs)
	}
	if fi, err := os.Stat(abs); err == nil && fi.IsDir() {
		return "", fmt.Errorf("sqlite: %s is a directory", abs)
	}
	return abs, nil
}

func (s *Store) open(ctx context.Context, cfg *Config) error {
	// Created here rather than by SQLite so that the file, and the WAL and
	// shared-memory files SQLite gives the same mode, are the owner's alone.
	f, err := os.OpenFile(s.path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("sqlite: open %s: %w", s.path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("sqlite: open %s: %w", s.path, err)
	}

	busy := strconv.FormatInt(cfg.BusyTimeout.Milliseconds(), 10)
	// synchronous(FULL): a commit returns once the WAL is on disk, so a
	// call reported finished replays after a power loss too, not only after
	// the process dies. Group commit (writer) pays that once per batch.
	s.wdb, err = sql.Open("sqlite", dsn(s.path, "busy_timeout("+busy+")", "foreign_keys(1)", "synchronous(FULL)",
		"journal_size_limit("+strconv.Itoa(walSizeLimit)+")"))
	if err != nil {
		return fmt.Errorf("sqlite: open %s: %w", s.path, err)
	}
	s.wdb.SetMaxOpenConns(1)
	s.wdb.SetMaxIdleConns(1)
	s.wdb.SetConnMaxLifetime(0)
	s.wdb.SetConnMaxIdleTime(0)
	conn, err := s.wdb.Conn(ctx)
	if err != nil {
		return s.openError(err)
	}
	if err := useWAL(ctx, conn, cfg.BusyTimeout); err != nil {
		_ = conn.Close()
		return s.openError(err)
	}
	if err := migrate(ctx, conn); err != nil {
		_ = conn.Close()
		return fmt.Errorf("sqlite: migrate %s: %w", s.path, err)
	}
	s.w = newWriter(conn)

	// Readers never write: query_only makes a mistake fail instead.
	s.rdb, err = sql.Open("sqlite", dsn(s.path, "busy_timeout("+busy+")", "query_only(1)"))
	if err != nil {
		return fmt.Errorf("sqlite: open %s: %w", s.path, err)
	}
	s.rdb.SetMaxOpenConns(cfg.ReadConnections)
	s.rdb.SetMaxIdleConns(cfg.ReadConnections)
	s.rdb.SetConnMaxLifetime(0)
	s.rdb.SetConnMaxIdleTime(0)
	if err := s.rdb.PingContext(ctx); err != nil {
		return s.openError(err)
	}
	return nil
}

// openError says which file could not be opened, and why.
func (s *Store) openError(err error) error {
	e, _ := classify(err)
	return fmt.Errorf("sqlite: open %s: %w", s.path, e)
}

// dsn is the driver's name for the file at path with the given pragmas
// run on each new connection. The path travels as a file: URI, escaped,
// so that no character of it is read as a parameter.
func dsn(path string, pragmas ...string) string {
	q := url.Values{"_pragma": pragmas}
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(path), RawQuery: q.Encode()}).String()
}

// useWAL switches the file to write-ahead logging, which lets reads go on
// while a write commits. The mode is kept in the file, so this converts a
// new file once; a file system that cannot share memory between processes
// (some network ones) cannot use WAL, and the store refuses to run there
// rather than run without it.
//
// Converting takes the file's exclusive lock, and SQLite answers "busy" at
// once, without waiting out the busy timeout, when another connection is
// converting or migrating the same new file: several processes opening one
// new file at once do. So a busy answer is tried again, for up to patience.
func useWAL(ctx context.Context, conn *sql.Conn, patience time.Duration) error {
	deadline := time.Now().Add(patience)
	for wait := time.Millisecond; ; wait = min(2*wait, 50*time.Millisecond) {
		var mode string
		err := conn.QueryRowContext(ctx, "PRAGMA journal_mode = WAL").Scan(&mode)
		if err == nil {
			if !strings.EqualFold(mode, "wal") {
				return fmt.Errorf("cannot use write-ahead logging (journal mode stays %q); is the file on a network file system?", mode)
			}
			return nil
		}
		if !isBusy(err) || time.Now().Add(wait).After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
}

// Close waits for the writes in progress, then closes the file. Operations
// after Close fail.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		var errs []error
		if s.w != nil {
			errs = append(errs, s.w.close())
		}
		s.reads.Range(func(_, v any) bool {
			errs = append(errs, v.(*sql.Stmt).Close())
			return true
		})
		for _, db := range []*sql.DB{s.rdb, s.wdb} {
			if db != nil {
				errs = append(errs, db.Close())
			}
		}
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

// Path returns the absolute path of the database file.
func (s *Store) Path() string { return s.path }

// write runs fn as one atomic write (see writer.do).
func (s *Store) write(ctx context.Context, fn func(tx *writeTx) error) error {
	return s.w.do(ctx, fn)
}

// ObserveBatches makes observe hear, from now on, how many writes each of
// the writer's transactions commits together ("write"; see writer).
func (s *Store) ObserveBatches(observe func(operation string, size int)) {
	f := func(n int) { observe("write", n) }
	s.w.observe.Store(&f)
}
