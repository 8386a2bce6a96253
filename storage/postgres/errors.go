package postgres

import (
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/toolgate/toolgate/storage"
)

// SQLSTATE codes the Store branches on.
const (
	codeUniqueViolation     = "23505"
	codeLockNotAvailable    = "55P03" // lock_timeout ran out
	codeDeadlockDetected    = "40P01"
	codeForeignKeyViolation = "23503"
)

// translate is the one place where driver errors become the storage
// sentinels callers match with errors.Is. Errors with no sentinel are
// wrapped, so errors.Is still finds context.Canceled and the like.
//
// Outcomes whose sentinel depends on the operation (ErrQuoteNotFound,
// ErrQuoteUsed, ErrIdempotencyConflict, ErrLeaseLost) are not driver errors:
// they are read off conditional statements that matched no row, where the
// operation decides.
func translate(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return storage.ErrNotFound
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case codeUniqueViolation:
			return fmt.Errorf("%w (%s)", storage.ErrAlreadyExists, pgErr.ConstraintName)
		case codeForeignKeyViolation:
			return fmt.Errorf("%w (%s)", storage.ErrNotFound, pgErr.ConstraintName)
		}
	}
	return fmt.Errorf("postgres: %w", err)
}
