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
	if errors.Is(err, sql.ErrNoRows) {
		return storage.ErrNotFound
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		// Extended result codes are on, so the low byte is the primary code.
		switch code := se.Code(); {
		case code == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY || code == sqlite3.SQLITE_CONSTRAINT_UNIQUE:
			return fmt.Errorf("%w (%s)", storage.ErrAlreadyExists, se.Error())
		case code == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
			return fmt.Errorf("%w (%s)", storage.ErrNotFound, se.Error())
		case code&0xff == sqlite3.SQLITE_BUSY || code&0xff == sqlite3.SQLITE_LOCKED:
			return fmt.Errorf("sqlite: the database stayed locked by another connection for longer than the busy timeout: %w", err)
		}
	}
	return fmt.Errorf("sqlite: %w", err)
}

// isNotFound reports whether err is, or wraps, storage.ErrNotFound.
func isNotFound(err error) bool { return errors.Is(err, storage.ErrNotFound) }
