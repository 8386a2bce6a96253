package postgres

import (
	"time"

	"github.com/toolgate/toolgate/storage"
)

// ListSQL and SpendSQL let the plan tests explain the very statements the
// audit queries run.
func (s *Store) ListSQL(q storage.ExecutionQuery) (string, []any) { return s.listSQL(q) }
func (s *Store) SpendSQL(q storage.SpendQuery) (string, []any)    { return s.spendSQL(q) }

// LockPrincipalSQL is the admission lock's statement for this Store's
// schema, for the test that it excludes an earlier version's form.
func (s *Store) LockPrincipalSQL() string { return s.sql(lockPrincipalSQL) }

// ChainLock is the advisory lock's two keys that a retrying sealed write
// holds on the principal's receipt chain, for the test that it excludes
// other sealed writes.
func (s *Store) ChainLock(principal string) (class, key int32) {
	return receiptLockClass, s.chainKey(principal)
}

// MeasureLimitsSQL is the statement MeasureLimits runs for limits, and its
// arguments, for the test that it reads the indexes.
func (s *Store) MeasureLimitsSQL(principal string, limits []storage.Limit) (string, []any, error) {
	return s.measureSQL(principal, limits)
}

// PendingAdmissions and PendingFinishes report the batches in flight and
// the calls waiting for the next, and BatchRetries the batches that failed
// as a whole and were sent again call by call, for the tests that make a
// batch form.
func (s *Store) PendingAdmissions() (inflight, queued int) { return s.admissions.Pending() }
func (s *Store) PendingFinishes() (inflight, queued int)   { return s.finishes.Pending() }
func (s *Store) BatchRetries() int64                       { return s.batchRetries.Load() }

// PendingQuotes is PendingAdmissions for quotes, and QuoteBatchesInFlight
// AdmissionBatchesInFlight.
func (s *Store) PendingQuotes() (inflight, queued int) { return s.quotes.Pending() }
func QuoteBatchesInFlight() int                        { return batchesInFlight }

// QuoteLockClass is the first key of the quote lock of a principal, whose
// second is hashtext(principal), for the tests that hold one.
const QuoteLockClass = openQuotesLockClass

// AdmissionBatchesInFlight and FinishBatchesInFlight are how many
// batches of each kind a Store sends at once.
func AdmissionBatchesInFlight() int { return batchesInFlight }
func FinishBatchesInFlight() int    { return batchesInFlight }

// SetLockWait changes how long the Store's batches wait for a lock, for
// tests that hold batches on purpose longer than the default.
func (s *Store) SetLockWait(d time.Duration) { s.lockWait = d }

// Recalls reports whether the Store would answer a call's reads r from
// memory (see AdmitCall), for the tests of what it remembers.
func (s *Store) Recalls(r storage.Reads) bool {
	_, ok := s.memo.answer(r)
	return ok
}
