package toolgatetest

import (
	"errors"

	"github.com/toolgate/toolgate/toolgatetype"
)

// T is what the helpers need of a test: *testing.T and *testing.B have it,
// and so can a stand-in where there is no test, as in this package's
// examples.
type T interface {
	Helper()
	Fatalf(format string, args ...any)
}

// RequireCompleted fails t unless the call returned a completed execution
// that cost totalUSD ("0.1100"; "0.0000" for a free tool). It returns the
// execution's output.
func RequireCompleted(t T, res *toolgatetype.CallResult, err error, totalUSD string) []byte {
	t.Helper()
	if err != nil {
		t.Fatalf("the call was refused: %v", err)
	}
	e := res.Execution
	if e.Status != toolgatetype.StatusCompleted {
		msg := ""
		if e.Error != nil {
			msg = e.Error.Code + ": " + e.Error.Message
		}
		t.Fatalf("execution %s %s (%s), want completed", e.ID, e.Status, msg)
	}
	if e.Cost.TotalUSD != totalUSD {
		t.Fatalf("execution %s cost $%s, want $%s", e.ID, e.Cost.TotalUSD, totalUSD)
	}
	return e.Output
}

// RequireFailed fails t unless the call returned a failed execution (which
// is never charged) with the error code given (a registry.CodeUpstream...).
func RequireFailed(t T, res *toolgatetype.CallResult, err error, code string) {
	t.Helper()
	if err != nil {
		t.Fatalf("the call was refused: %v", err)
	}
	e := res.Execution
	if e.Status != toolgatetype.StatusFailed || e.Error == nil {
		t.Fatalf("execution %s %s, want failed with %s", e.ID, e.Status, code)
	}
	if e.Error.Code != code {
		t.Fatalf("execution %s failed with %s (%s), want %s", e.ID, e.Error.Code, e.Error.Message, code)
	}
}

// RequireCode fails t unless err is a *toolgatetype.Error with code, and
// returns it for a look at its details.
func RequireCode(t T, err error, code toolgatetype.Code) *toolgatetype.Error {
	t.Helper()
	var te *toolgatetype.Error
	if !errors.As(err, &te) {
		t.Fatalf("got %v, want a *toolgatetype.Error with code %s", err, code)
	}
	if te.Code != code {
		t.Fatalf("got %s (%s), want %s", te.Code, te.Message, code)
	}
	return te
}
