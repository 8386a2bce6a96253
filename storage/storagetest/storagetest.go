// Package storagetest is the conformance suite for storage.Store. Every
// backend in this module runs it, and so should any fake a user writes:
//
//	func TestStore(t *testing.T) {
//		storagetest.Run(t, func(t *testing.T) storage.Store { return mystore.New() })
//	}
//
// The suite checks the behaviour the gateway relies on, as documented on
// storage.Store: the all-or-nothing admission of BeginExecution and of
// AdmitCall, decided on what the store holds at the time, lease
// takeover, limits that hold under contention, ambiguous executions that
// keep their reservation until resolved once, approval requests decided
// once and grants used once, the same request pending once, retention,
// copying, the audit trail's listings and spend sums, and budgets shared
// by many principals, counted, refused and summed on their own days,
// sessions, windows of counted events, secrets, alerts claimed once and
// the count of ambiguous executions that wait: every method of the one
// storage.Store, on every store.
// Its concurrency tests are meant to run under the race detector.
package storagetest

import (
	"testing"

	"github.com/toolgate/toolgate/storage"
)

// newStoreFunc is Run's store factory.
type newStoreFunc = func(t *testing.T) storage.Store

// Run runs the whole conformance suite against stores made by newStore.
// newStore is called once per subtest and must return an empty store. The
// subtests run in parallel, so stores from different calls must not share
// state; a backend over a shared database can create a schema per call and
// drop it with t.Cleanup.
func Run(t *testing.T, newStore func(t *testing.T) storage.Store) {
	t.Helper()
	groups := []struct {
		name string
		run  func(*testing.T, newStoreFunc)
	}{
		{"Quote", testQuote},
		{"OpenQuotes", testOpenQuotes},
		{"BeginExecution", testBegin},
		{"MeasureLimits", testMeasure},
		{"ReadBatch", testReadBatch},
		{"AdmitCall", testAdmitCall},
		{"FinishExecution", testFinish},
		{"Ambiguous", testAmbiguous},
		{"AmbiguousWaiting", testAmbiguousWaiting},
		{"Usage", testUsage},
		{"Approval", testApproval},
		{"ApprovalRequests", testApprovalRequests},
		{"QuoteLife", testQuoteLife},
		{"SameRequest", testSameRequest},
		{"SpendControls", testSpendControls},
		{"Prune", testPrune},
		{"Audit", testAudit},
		{"Copies", testCopies},
		{"Concurrency", testConcurrency},
		{"Sessions", testSessions},
		{"Windows", testWindows},
		{"Secrets", testSecrets},
		{"Receipts", testReceipts},
		{"Budgets", testBudgets},
		{"BudgetSpend", testBudgetSpend},
		{"Outbox", testOutbox},
		{"Rules", testRules},
		{"RequestBudgets", testRequestBudgets},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) { g.run(t, newStore) })
	}
}
