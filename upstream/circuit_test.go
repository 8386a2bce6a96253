package upstream_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/toolgatetype"
)

// ratesAnswer is a good answer of the exchange-rates provider.
const ratesAnswer = `[{"date":"2026-03-25","base":"USD","quote":"EUR","rate":0.9251}]`

// refusingProvider answers 500 with a body that explains the refusal (as a
// provider does when the input is what it cannot take) while failing is
// set, and well otherwise; hits counts the requests that reached it.
func refusingProvider(t *testing.T, failing *atomic.Bool, hits *atomic.Int64) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		if failing.Load() {
			w.WriteHeader(http.StatusInternalServerError)
			w.Write([]byte(`{"error":"cannot convert these currencies"}`))
			return
		}
		w.Write([]byte(ratesAnswer))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// requireHeldBack checks that res is a call the breaker held back, with
// when to call again, and returns its message.
func requireHeldBack(t *testing.T, res *toolgatetype.CallResult) string {
	t.Helper()
	require.Equal(t, toolgatetype.StatusFailed, res.Execution.Status)
	require.NotNil(t, res.Execution.Error)
	assert.Equal(t, registry.CodeUpstreamUnavailable, res.Execution.Error.Code)
	assert.Equal(t, 30, res.Execution.Error.RetryAfterSeconds, "the cool-down left: the whole of it")
	return res.Execution.Error.Message
}

// One caller cannot switch a tool off for others (contract section 28):
// five failures that only alice's calls met (the provider answered them
// with an explanation) hold back alice alone. Bob's call still reaches the
// provider, and alice's calls resume after the cool-down.
func TestCircuitHoldsBackOnlyTheCallerWhoseCallsFail(t *testing.T) {
	t.Parallel()
	var failing atomic.Bool
	var hits atomic.Int64
	failing.Store(true)
	e := newHostileEnv(t, nil)
	require.NoError(t, e.reg.SetOrigin("exchange-rates", refusingProvider(t, &failing, &hits)))

	for i := range 5 {
		res := e.call(t, "alice", "exchange-rates", fmt.Sprintf("fail-%d", i), ratesInput)
		require.Equal(t, registry.CodeUpstreamError, res.Execution.Error.Code)
	}
	require.EqualValues(t, 5, hits.Load())

	// Alice is held back, without her call reaching the provider.
	msg := requireHeldBack(t, e.call(t, "alice", "exchange-rates", "held", ratesInput))
	assert.Contains(t, msg, "this caller's calls resume after")
	assert.EqualValues(t, 5, hits.Load())

	// Bob is not: his call reaches the provider, which takes his input.
	failing.Store(false)
	res := e.call(t, "bob", "exchange-rates", "bob-1", ratesInput)
	assert.Equal(t, toolgatetype.StatusCompleted, res.Execution.Status)
	assert.EqualValues(t, 6, hits.Load())

	// Alice still is, until her cool-down ends; then a trial of hers
	// goes through and closes her circuit.
	e.clock.Advance(29 * time.Second)
	res = e.call(t, "alice", "exchange-rates", "still-held", ratesInput)
	assert.Equal(t, registry.CodeUpstreamUnavailable, res.Execution.Error.Code)
	assert.Equal(t, 1, res.Execution.Error.RetryAfterSeconds)
	assert.EqualValues(t, 6, hits.Load())
	e.clock.Advance(2 * time.Second)
	res = e.call(t, "alice", "exchange-rates", "trial", ratesInput)
	assert.Equal(t, toolgatetype.StatusCompleted, res.Execution.Status)
	res = e.call(t, "alice", "exchange-rates", "closed", ratesInput)
	assert.Equal(t, toolgatetype.StatusCompleted, res.Execution.Status)
	assert.EqualValues(t, 8, hits.Load())
}

// Failures that two principals meet are the provider's: five in a row,
// from alice and bob, open the circuit for everyone.
func TestCircuitOpensForEveryoneOnFailuresOfTwoPrincipals(t *testing.T) {
	t.Parallel()
	var failing atomic.Bool
	var hits atomic.Int64
	failing.Store(true)
	e := newHostileEnv(t, nil)
	require.NoError(t, e.reg.SetOrigin("exchange-rates", refusingProvider(t, &failing, &hits)))

	for i, principal := range []string{"alice", "alice", "alice", "bob", "bob"} {
		res := e.call(t, principal, "exchange-rates", fmt.Sprintf("fail-%d", i), ratesInput)
		require.Equal(t, registry.CodeUpstreamError, res.Execution.Error.Code)
	}
	require.EqualValues(t, 5, hits.Load())

	// Carol has not called yet, and is held back too.
	failing.Store(false)
	msg := requireHeldBack(t, e.call(t, "carol", "exchange-rates", "carol-1", ratesInput))
	assert.Contains(t, msg, "the provider has been failing; calls resume after")
	assert.EqualValues(t, 5, hits.Load())
}

// A failure that is clearly the provider's opens the circuit for everyone
// even when one principal alone met it: five refused connections of
// alice's, and bob is held back too.
func TestCircuitOpensForEveryoneOnOnePrincipalsRefusedConnections(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	origin := srv.URL
	srv.Close() // nothing listens there any more: connections are refused
	e := newHostileEnv(t, nil)
	require.NoError(t, e.reg.SetOrigin("exchange-rates", origin))

	for i := range 5 {
		res := e.call(t, "alice", "exchange-rates", fmt.Sprintf("fail-%d", i), ratesInput)
		require.Equal(t, registry.CodeUpstreamUnavailable, res.Execution.Error.Code)
		require.Contains(t, res.Execution.Error.Message, "could not be reached")
	}
	msg := requireHeldBack(t, e.call(t, "bob", "exchange-rates", "bob-1", ratesInput))
	assert.Contains(t, msg, "the provider has been failing; calls resume after")
}
