package client

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/httpapi"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"
)

// The answer to a call is lost twice after the gateway ran it: the client
// sends the same body under the same key until an answer arrives, and the
// tool is reached and charged once.
func TestCallSurvivesLostAnswers(t *testing.T) {
	t.Parallel()
	for _, key := range []string{"", "agent-7/step-1"} {
		t.Run("key "+key, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, nil)
			e.proxy.inject(dropAnswer, dropAnswer)
			req := approved(e.quote("paid"), "hello")
			req.IdempotencyKey = key

			res, err := e.client(nil).Call(context.Background(), req)
			out := toolgatetest.RequireCompleted(t, res, err, "0.1100")
			assert.JSONEq(t, `{"value":"hello"}`, string(out))
			assert.True(t, res.Replayed, "the run the lost answers came from is the one returned")
			if key != "" {
				assert.Equal(t, key, res.IdempotencyKey)
			}
			require.NotEmpty(t, res.IdempotencyKey)

			seen := e.proxy.requests()
			require.Len(t, seen, 3)
			for _, s := range seen {
				assert.Equal(t, res.IdempotencyKey, s.idempotencyKey)
				assert.Equal(t, seen[0].body, s.body)
			}
			e.gw.Upstream.RequireCalls(t, 1)
			e.gw.RequireSpent(t, "alice", "0.1100")
			rec, err := e.gw.Store.GetIdempotency(context.Background(), "alice", res.IdempotencyKey)
			require.NoError(t, err)
			assert.Equal(t, res.Execution.ID, rec.ExecutionID.String(), "one execution for the key")
		})
	}
}

func TestCallMakesUpAKeyPerCall(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	c := e.client(nil)
	first, err := c.Call(context.Background(), approved(e.quote("echo"), "a"))
	toolgatetest.RequireCompleted(t, first, err, "0.0000")
	second, err := c.Call(context.Background(), approved(e.quote("echo"), "b"))
	toolgatetest.RequireCompleted(t, second, err, "0.0000")
	assert.NotEqual(t, first.IdempotencyKey, second.IdempotencyKey)
	seen := e.proxy.requests()
	require.Len(t, seen, 2)
	assert.Equal(t, first.IdempotencyKey, seen[0].idempotencyKey)
	assert.Equal(t, second.IdempotencyKey, seen[1].idempotencyKey)
}

// What a call meets on its way decides whether it is sent again.
func TestCallRetriesOnlyWhatCannotRunTwice(t *testing.T) {
	t.Parallel()
	html := "<html><body>Service Unavailable</body></html>"
	internal := `{"error":{"code":"internal_error","message":"the gateway could not complete the request"}}`
	for _, tc := range []struct {
		name      string
		faults    []fault
		opts      *Options
		sent      int               // requests that reached the proxy
		waits     []time.Duration   // nil: any backoff
		wantCode  toolgatetype.Code // the gateway's refusal, if any
		wantProxy int               // a status a proxy answered with, if that is the outcome
	}{
		{name: "503 with Retry-After waits it out", faults: []fault{reply(503, retryAfter("2"), html)},
			sent: 2, waits: []time.Duration{2 * time.Second}},
		{name: "502", faults: []fault{reply(502, nil, html)}, sent: 2},
		{name: "504 twice", faults: repeat(reply(504, nil, html), 2), sent: 3},
		{name: "a dropped connection", faults: []fault{hang}, sent: 2,
			opts: &Options{HTTPClient: &http.Client{Timeout: 100 * time.Millisecond}}},
		{name: "500 from the gateway is not retried", faults: []fault{reply(500, nil, internal)},
			sent: 1, wantCode: toolgatetype.CodeInternal},
		{name: "500 from a proxy is not retried", faults: []fault{reply(500, nil, html)}, sent: 1, wantProxy: 500},
		{name: "no more than MaxAttempts", faults: repeat(reply(503, nil, html), 5), opts: &Options{MaxAttempts: 3},
			sent: 3, wantProxy: 503},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, nil)
			e.proxy.inject(tc.faults...)
			res, err := e.client(tc.opts).Call(context.Background(), approved(e.quote("echo"), "x"))
			switch {
			case tc.wantCode != "":
				toolgatetest.RequireCode(t, err, tc.wantCode)
				e.gw.Upstream.RequireCalls(t, 0)
			case tc.wantProxy != 0:
				var te *TransportError
				require.ErrorAs(t, err, &te)
				assert.Equal(t, tc.wantProxy, te.StatusCode)
				assert.True(t, te.MayHaveReachedServer)
				assert.Equal(t, tc.sent, te.Attempts)
				e.gw.Upstream.RequireCalls(t, 0)
			default:
				toolgatetest.RequireCompleted(t, res, err, "0.0000")
				e.gw.Upstream.RequireCalls(t, 1)
			}
			assert.Len(t, e.proxy.requests(), tc.sent)
			if tc.waits != nil {
				assert.Equal(t, tc.waits, e.recordedWaits())
			}
		})
	}
}

// The gateway's refusals are answers: sent once, returned as they are.
func TestRefusalsAreNotRetried(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		code   toolgatetype.Code
		status int
		call   func(q *toolgatetype.QuoteResult) toolgatetype.CallRequest
	}{
		{toolgatetype.CodeApprovalRequired, 403, func(q *toolgatetype.QuoteResult) toolgatetype.CallRequest {
			r := approved(q, "x")
			r.ApprovalDigest = ""
			return r
		}},
		{toolgatetype.CodeQuoteNotFound, 404, func(q *toolgatetype.QuoteResult) toolgatetype.CallRequest {
			r := approved(q, "x")
			r.QuoteID = uuid.NewString()
			return r
		}},
		{toolgatetype.CodeInputInvalid, 422, func(q *toolgatetype.QuoteResult) toolgatetype.CallRequest { return approved(q, "") }},
		{toolgatetype.CodeIdempotencyKeyReused, 422, nil}, // below
	} {
		t.Run(string(tc.code), func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.status, httpapi.StatusOf(tc.code))
			e := newEnv(t, nil)
			c := e.client(nil)
			q := e.quote("echo")
			req := approved(q, "x")
			if tc.call != nil {
				req = tc.call(q)
			} else {
				req.IdempotencyKey = "k1"
				_, err := c.Call(context.Background(), req)
				require.NoError(t, err)
				req.Input = []byte(`{"v":"another"}`)
			}
			before := len(e.proxy.requests())
			_, err := c.Call(context.Background(), req)
			toolgatetest.RequireCode(t, err, tc.code)
			assert.Len(t, e.proxy.requests(), before+1)
			assert.Empty(t, e.recordedWaits())
		})
	}
}

// A rate-limited call waits what the gateway asked and then runs; when
// that wait would pass the deadline, rate_limited comes back at once with
// its RetryAfter.
func TestRateLimitedCall(t *testing.T) {
	t.Parallel()
	one := 1
	limits := toolgatetype.StaticSpendControls{"alice": toolgatetype.SpendControls{RateLimitPerMinute: &one}}
	newLimited := func(t *testing.T) (*env, time.Duration) {
		e := newEnv(t, &envOptions{config: &toolgate.Config{SpendControls: limits}})
		res, err := e.client(nil).Call(context.Background(), approved(e.quote("echo"), "first"))
		toolgatetest.RequireCompleted(t, res, err, "0.0000")
		_, err = e.client(&Options{MaxAttempts: 1}).Call(context.Background(), approved(e.quote("echo"), "probe"))
		refused := toolgatetest.RequireCode(t, err, toolgatetype.CodeRateLimited)
		require.Greater(t, refused.RetryAfter, 30*time.Second)
		return e, refused.RetryAfter
	}

	t.Run("waits its Retry-After", func(t *testing.T) {
		t.Parallel()
		e, asked := newLimited(t)
		res, err := e.client(nil).Call(context.Background(), approved(e.quote("echo"), "second"))
		toolgatetest.RequireCompleted(t, res, err, "0.0000")
		assert.Equal(t, []time.Duration{asked}, e.recordedWaits())
		e.gw.Upstream.RequireCalls(t, 2)
	})
	t.Run("a Backoff of one's own waits it out too", func(t *testing.T) {
		t.Parallel()
		e, asked := newLimited(t)
		brief := func(time.Duration, time.Duration, int, *http.Response) time.Duration { return time.Millisecond }
		res, err := e.client(&Options{Backoff: brief}).Call(context.Background(), approved(e.quote("echo"), "second"))
		toolgatetest.RequireCompleted(t, res, err, "0.0000")
		assert.Equal(t, []time.Duration{asked}, e.recordedWaits())
	})
	t.Run("returns it when the deadline would pass", func(t *testing.T) {
		t.Parallel()
		e, asked := newLimited(t)
		ctx, cancel := context.WithTimeout(context.Background(), asked/2)
		defer cancel()
		before := len(e.proxy.requests())
		_, err := e.client(nil).Call(ctx, approved(e.quote("echo"), "second"))
		refused := toolgatetest.RequireCode(t, err, toolgatetype.CodeRateLimited)
		assert.Equal(t, asked, refused.RetryAfter)
		assert.Empty(t, e.recordedWaits())
		assert.Len(t, e.proxy.requests(), before+1)
		assert.NoError(t, ctx.Err(), "it did not wait for the deadline")
	})
}

// A key still held by a run in flight (409 idempotency_key_in_use) is
// retried until that run's result can be replayed.
func TestCallWaitsForTheRunInFlight(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	req := approved(e.quote("paid"), "slow")
	req.IdempotencyKey = "agent-7/step-1"
	// An earlier run of the same call, still at the provider, finishes
	// while the client waits to retry.
	finish := e.startInFlight(req)
	var first *toolgatetype.CallResult
	e.onWait = func(context.Context, time.Duration) error {
		var err error
		first, err = finish()
		return err
	}

	res, err := e.client(nil).Call(context.Background(), req)
	toolgatetest.RequireCompleted(t, res, err, "0.1100")
	assert.True(t, res.Replayed)
	assert.Equal(t, first.Body, res.Body)
	assert.Len(t, e.recordedWaits(), 1)
	e.gw.Upstream.RequireCalls(t, 1)
	e.gw.RequireSpent(t, "alice", "0.1100")
}

// The context bounds every attempt and every wait.
func TestContextStopsRetries(t *testing.T) {
	t.Parallel()
	html := "<html>Service Unavailable</html>"

	t.Run("a wait that would pass the deadline is not begun", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, nil)
		e.proxy.inject(repeat(reply(503, nil, html), 3)...)
		hour := func(time.Duration, time.Duration, int, *http.Response) time.Duration { return time.Hour }
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, err := e.client(&Options{Backoff: hour}).Call(ctx, approved(e.quote("echo"), "x"))
		var te *TransportError
		require.ErrorAs(t, err, &te)
		assert.Equal(t, 503, te.StatusCode)
		assert.Equal(t, 1, te.Attempts)
		assert.Empty(t, e.recordedWaits())
		assert.NoError(t, ctx.Err())
	})
	t.Run("the deadline passing during an attempt", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, nil)
		e.proxy.inject(repeat(hang, 3)...)
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, err := e.client(nil).Call(ctx, approved(e.quote("echo"), "x"))
		var te *TransportError
		require.ErrorAs(t, err, &te)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.True(t, te.MayHaveReachedServer)
		assert.NotEmpty(t, te.IdempotencyKey, "the key to learn the outcome with")
		assert.Equal(t, 1, te.Attempts)
		assert.Len(t, e.proxy.requests(), 1)
	})
	t.Run("cancelled while waiting", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, nil)
		e.proxy.inject(repeat(reply(503, nil, html), 3)...)
		ctx, cancel := context.WithCancel(context.Background())
		e.onWait = func(ctx context.Context, _ time.Duration) error {
			cancel()
			return ctx.Err()
		}
		_, err := e.client(nil).Call(ctx, approved(e.quote("echo"), "x"))
		assert.ErrorIs(t, err, context.Canceled)
		var te *TransportError
		require.ErrorAs(t, err, &te, "the last attempt's outcome comes with it")
		assert.Equal(t, 503, te.StatusCode)
		assert.Len(t, e.proxy.requests(), 1)
	})
}

// A quote creates something on the gateway, so it is sent again only when
// it cannot have arrived.
func TestQuoteRetriedOnlyWhenRefused(t *testing.T) {
	t.Parallel()
	t.Run("refused, then the gateway is up", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, nil)
		addr := freeAddr(t)
		e.onWait = func(context.Context, time.Duration) error {
			if len(e.recordedWaits()) == 1 {
				l, err := net.Listen("tcp", addr)
				require.NoError(t, err)
				srv := httptest.NewUnstartedServer(e.proxy)
				srv.Listener.Close()
				srv.Listener = l
				srv.Start()
				t.Cleanup(srv.Close)
			}
			return nil
		}
		q, err := e.clientAt("http://"+addr, aliceKey, nil).Quote(context.Background(), "echo")
		require.NoError(t, err)
		assert.Equal(t, "echo", q.Tool.Slug)
		assert.Len(t, e.recordedWaits(), 1)
	})
	t.Run("refused every time", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, nil)
		_, err := e.clientAt("http://"+freeAddr(t), aliceKey, &Options{MaxAttempts: 3}).Quote(context.Background(), "echo")
		var te *TransportError
		require.ErrorAs(t, err, &te)
		assert.False(t, te.MayHaveReachedServer)
		assert.Equal(t, 3, te.Attempts)
		assert.Zero(t, te.StatusCode)
	})
	for _, f := range []struct {
		name  string
		fault fault
	}{
		{"the answer was lost", dropAnswer},
		{"a proxy answered 503", reply(503, retryAfter("1"), "busy")},
	} {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, nil)
			e.proxy.inject(f.fault)
			_, err := e.client(nil).Quote(context.Background(), "echo")
			var te *TransportError
			require.ErrorAs(t, err, &te)
			assert.True(t, te.MayHaveReachedServer)
			assert.Empty(t, te.IdempotencyKey)
			assert.Len(t, e.proxy.requests(), 1)
			assert.Empty(t, e.recordedWaits())
		})
	}
}

// Reads and replacements are repeatable, so they are retried like calls.
func TestReadsAreRetried(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.proxy.inject(dropAnswer, reply(502, nil, "bad gateway"))
	entry, err := e.client(nil).Entry(context.Background(), "paid")
	require.NoError(t, err)
	assert.Equal(t, "Echo paid", entry.Name)
	assert.Len(t, e.proxy.requests(), 3)
	assert.Len(t, e.recordedWaits(), 2)
}

// freeAddr is a loopback address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

func TestDefaultBackoff(t *testing.T) {
	t.Parallel()
	min, max := 100*time.Millisecond, 5*time.Second
	for attempt := 0; attempt < 70; attempt++ {
		want := min << attempt
		if attempt >= 32 || want <= 0 || want > max {
			want = max
		}
		got := DefaultBackoff(min, max, attempt, nil)
		assert.GreaterOrEqual(t, got, want/2, "attempt %d", attempt)
		assert.LessOrEqual(t, got, want, "attempt %d", attempt)
	}
	for _, tc := range []struct {
		status int
		header string
		want   time.Duration
	}{
		{429, "30", 30 * time.Second},
		{503, "0", 0},
		{503, time.Now().Add(time.Hour).UTC().Format(http.TimeFormat), time.Hour},
	} {
		resp := &http.Response{StatusCode: tc.status, Header: http.Header{"Retry-After": {tc.header}}}
		assert.InDelta(t, tc.want, DefaultBackoff(min, max, 0, resp), float64(2*time.Second), "%d %s", tc.status, tc.header)
	}
	// A Retry-After on another status is the server's business, not a wait.
	resp := &http.Response{StatusCode: 502, Header: http.Header{"Retry-After": {"600"}}}
	assert.LessOrEqual(t, DefaultBackoff(min, max, 0, resp), min)
}

func TestDefaultRetryPolicy(t *testing.T) {
	t.Parallel()
	refused := &TransportError{Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}
	dropped := &TransportError{MayHaveReachedServer: true, Err: errors.New("EOF")}
	unknownHost := &TransportError{Err: &net.DNSError{Err: "no such host", Name: "gateway.invalid", IsNotFound: true}}
	inUse := &toolgatetype.Error{Code: toolgatetype.CodeIdempotencyKeyInUse}
	quoteUsed := &toolgatetype.Error{Code: toolgatetype.CodeQuoteUsed}
	answer := func(status int) *http.Response { return &http.Response{StatusCode: status, Header: http.Header{}} }
	call := func() *http.Request {
		r := httptest.NewRequest(http.MethodPost, "/v1/tools/echo/call", nil)
		r.Header.Set("Idempotency-Key", "k")
		return r
	}
	quote := func() *http.Request { return httptest.NewRequest(http.MethodPost, "/v1/tools/echo/quote", nil) }
	get := func() *http.Request { return httptest.NewRequest(http.MethodGet, "/v1/executions/x", nil) }
	done, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		req  *http.Request
		resp *http.Response
		err  error
		want bool
	}{
		{"call, refused", nil, call(), nil, refused, true},
		{"call, dropped", nil, call(), nil, dropped, true},
		{"call, unknown host", nil, call(), nil, unknownHost, false},
		{"call, in use", nil, call(), answer(409), inUse, true},
		{"call, quote used", nil, call(), answer(409), quoteUsed, false},
		{"call, 429", nil, call(), answer(429), &toolgatetype.Error{Code: toolgatetype.CodeRateLimited}, true},
		{"call, 500", nil, call(), answer(500), &toolgatetype.Error{Code: toolgatetype.CodeInternal}, false},
		{"call, 502", nil, call(), answer(502), &TransportError{StatusCode: 502}, true},
		{"call, 503, context done", done, call(), answer(503), &TransportError{StatusCode: 503}, false},
		{"quote, refused", nil, quote(), nil, refused, true},
		{"quote, dropped", nil, quote(), nil, dropped, false},
		{"quote, 503", nil, quote(), answer(503), &TransportError{StatusCode: 503}, false},
		{"get, dropped", nil, get(), nil, dropped, true},
		{"get, 504", nil, get(), answer(504), &TransportError{StatusCode: 504}, true},
		{"get, 404", nil, get(), answer(404), &toolgatetype.Error{Code: toolgatetype.CodeExecutionNotFound}, false},
	} {
		ctx := tc.ctx
		if ctx == nil {
			ctx = context.Background()
		}
		got, err := DefaultRetryPolicy(ctx, tc.req, tc.resp, tc.err)
		assert.NoError(t, err, tc.name)
		assert.Equal(t, tc.want, got, tc.name)
	}
}
