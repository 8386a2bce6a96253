package sqlite

import (
	"database/sql"
	"errors"
	"fmt"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/toolgate/toolgate/storage"
)

// ErrClosed is returned by a write made after Close.
var ErrClosed = errors.New("sqlite: store is closed")

// translate is the one place where driver errors become the storage
// sentinels callers match with errors.Is. Errors with no sentinel are
// wrapped, so errors.Is still finds context.Canceled and the like.
//
// Outcomes whose sentinel depends on the operation (ErrQuoteNotFound,
// ErrQuoteUsed, ErrIdempotencyConflict, ErrLeaseLost) are not driver
// errors: the operation reads them off what it found, inside its
// transaction.
func translate(err error) error {
	if err == nil {
		return nil
	}
	e, sentinel := classify(err)
	if sentinel {
		return e
	}
	return fmt.Errorf("sqlite: %w", e)
}

// classify says what a driver error means: a storage sentinel (sentinel is
// true), a sentence for a lock held too long, or err as it is.
func classify(err error) (e error, sentinel bool) {
	if errors.Is(err, sql.ErrNoRows) {
		return storage.ErrNotFound, true
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		// Extended result codes are on, so the low byte is the primary code.
		switch code := se.Code(); {
		case code == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY || code == sqlite3.SQLITE_CONSTRAINT_UNIQUE:
			return fmt.Errorf("%w (%s)", storage.ErrAlreadyExists, se.Error()), true
		case code == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
			return fmt.Errorf("%w (%s)", storage.ErrNotFound, se.Error()), true
		case isBusy(err):
			return fmt.Errorf("the database stayed locked by another connection for longer than the busy timeout: %w", err), false
		}
	}
	return err, false
}

// isNotFound reports whether err is, or wraps, storage.ErrNotFound.
func isNotFound(err error) bool { return errors.Is(err, storage.ErrNotFound) }

// isBusy reports whether err is SQLite's "busy" or "locked": another
// connection holds a lock this one needs.
func isBusy(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	code := se.Code() & 0xff
	return code == sqlite3.SQLITE_BUSY || code == sqlite3.SQLITE_LOCKED
}
