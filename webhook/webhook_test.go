package webhook_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolgate/toolgate/internal/testproc"
	"github.com/toolgate/toolgate/toolgatetype"
	"github.com/toolgate/toolgate/webhook"
)

// The Standard Webhooks specification's published test vector (its
// reference libraries' signing test).
func TestSignMatchesTheSpecificationsTestVector(t *testing.T) {
	t.Parallel()
	key, err := webhook.ParseSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	require.NoError(t, err)
	payload := []byte(`{"test": 2432232314}`)
	at := time.Unix(1614265330, 0)
	got := webhook.Sign(key, "msg_p5jXN8AQM9LWM0D4loKWxJek", at, payload)
	assert.Equal(t, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=", got)

	assert.True(t, webhook.Verify(key, "msg_p5jXN8AQM9LWM0D4loKWxJek", at, payload, "v1,bogus "+got))
	assert.False(t, webhook.Verify(key, "msg_p5jXN8AQM9LWM0D4loKWxJek", at.Add(time.Second), payload, got), "the timestamp is signed")
	assert.False(t, webhook.Verify(key, "msg_other", at, payload, got), "the id is signed")
	assert.False(t, webhook.Verify(key, "msg_p5jXN8AQM9LWM0D4loKWxJek", at, []byte(`{"test": 2432232315}`), got), "the payload is signed")
}

// distinctiveSecret is a secret no log line or body could hold by chance.
const distinctiveSecret = "whsec_" + "ZGlzdGluY3RpdmUtc2VjcmV0LXRoYXQtbXVzdC1uZXZlci1sZWFr"

func TestParseSecret(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		secret string
		ok     bool
	}{
		{"TheSpecificationsExample", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", true},
		{"Distinctive", distinctiveSecret, true},
		{"NoPrefix", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", false},
		{"NotBase64", "whsec_not base64!", false},
		{"TooShort", "whsec_" + base64.StdEncoding.EncodeToString(make([]byte, 23)), false},
		{"TooLong", "whsec_" + base64.StdEncoding.EncodeToString(make([]byte, 65)), false},
		{"Empty", "", false},
	}
	for _, c := range cases {
		_, err := webhook.ParseSecret(c.secret)
		if c.ok {
			assert.NoError(t, err, c.name)
			continue
		}
		require.ErrorIs(t, err, webhook.ErrBadSecret, c.name)
		if c.secret != "" {
			assert.NotContains(t, err.Error(), strings.TrimPrefix(c.secret, "whsec_"), c.name)
		}
	}
	_, err := webhook.New("ftp://example.test/hook", distinctiveSecret, nil)
	assert.Error(t, err)
	assert.NotContains(t, err.Error(), "ZGlzdGluY3", "an error never quotes the secret")
}

// receiver is a webhook endpoint that records what it gets and answers
// with the statuses it is given, then 200.
type receiver struct {
	mu       sync.Mutex
	statuses []int
	got      []received
	arrived  chan struct{}
}

type received struct {
	header http.Header
	body   []byte
}

func newReceiver(statuses ...int) (*receiver, *httptest.Server) {
	r := &receiver{statuses: statuses, arrived: make(chan struct{}, 100)}
	return r, httptest.NewServer(r)
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	rc.got = append(rc.got, received{header: r.Header.Clone(), body: body})
	status := http.StatusOK
	if len(rc.statuses) > 0 {
		status, rc.statuses = rc.statuses[0], rc.statuses[1:]
	}
	rc.mu.Unlock()
	w.WriteHeader(status)
	rc.arrived <- struct{}{}
}

// await waits for n more requests; the deadline only keeps a broken
// sender from hanging the test.
func (rc *receiver) await(t *testing.T, n int) []received {
	t.Helper()
	for range n {
		select {
		case <-rc.arrived:
		case <-time.After(10 * time.Second):
			t.Fatal("the webhook never arrived")
		}
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.got...)
}

func testEvent() toolgatetype.ApprovalEvent {
	return toolgatetype.ApprovalEvent{
		Type:      toolgatetype.ApprovalRequestCreated,
		Timestamp: time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC),
		Request: toolgatetype.ApprovalRequest{
			ID: "0b6f3a52-9c1e-4a4e-9c2a-6e1f0d3c2b1a", Status: toolgatetype.ApprovalStatusPending, Principal: "agent",
			Tool:       toolgatetype.ToolRef{ID: "t1", Slug: "echo", Name: "Echo"},
			Input:      json.RawMessage(`{"v":"hi"}`),
			ApproveURL: "https://caller-controlled.example/phish",
		},
	}
}

func noWait(int) time.Duration { return 0 }

func TestSenderDeliversSignedEvents(t *testing.T) {
	t.Parallel()
	rc, srv := newReceiver()
	defer srv.Close()
	s, err := webhook.New(srv.URL+"/hook", distinctiveSecret, &webhook.Config{
		ApproveURL: func(id string) string { return "https://gateway.example/approvals/" + id },
	})
	require.NoError(t, err)
	defer s.Close(context.Background())

	s.NotifyApproval(context.Background(), testEvent())
	got := rc.await(t, 1)[0]

	assert.Equal(t, "application/json", got.header.Get("Content-Type"))
	id := got.header.Get("webhook-id")
	assert.Regexp(t, `^msg_[0-9a-f]{32}$`, id)
	secs, err := strconv.ParseInt(got.header.Get("webhook-timestamp"), 10, 64)
	require.NoError(t, err)
	key, err := webhook.ParseSecret(distinctiveSecret)
	require.NoError(t, err)
	assert.True(t, webhook.Verify(key, id, time.Unix(secs, 0), got.body, got.header.Get("webhook-signature")), "signed as the specification says")
	assert.Regexp(t, `^v1,[A-Za-z0-9+/]+=*$`, got.header.Get("webhook-signature"))

	var body map[string]any
	require.NoError(t, json.Unmarshal(got.body, &body))
	assert.Equal(t, "approval_request.created", body["type"])
	assert.Equal(t, "2026-03-14T12:00:00Z", body["timestamp"])
	data := body["data"].(map[string]any)
	assert.Equal(t, "0b6f3a52-9c1e-4a4e-9c2a-6e1f0d3c2b1a", data["id"])
	assert.Equal(t, "pending", data["status"])
	assert.Equal(t, "https://gateway.example/approvals/0b6f3a52-9c1e-4a4e-9c2a-6e1f0d3c2b1a", data["approveUrl"],
		"the operator's address, never one a caller's request supplied")
	assert.NotContains(t, string(got.body), "ZGlzdGluY3")
}

func TestSenderRetriesWithTheSameID(t *testing.T) {
	t.Parallel()
	rc, srv := newReceiver(http.StatusInternalServerError, http.StatusServiceUnavailable)
	defer srv.Close()
	s, err := webhook.New(srv.URL, distinctiveSecret, &webhook.Config{Backoff: noWait})
	require.NoError(t, err)
	defer s.Close(context.Background())

	s.NotifyApproval(context.Background(), testEvent())
	got := rc.await(t, 3)
	require.Len(t, got, 3, "two failures, then delivered")
	key, _ := webhook.ParseSecret(distinctiveSecret)
	for _, g := range got {
		assert.Equal(t, got[0].header.Get("webhook-id"), g.header.Get("webhook-id"), "a retry keeps its id")
		assert.Equal(t, got[0].body, g.body)
		secs, _ := strconv.ParseInt(g.header.Get("webhook-timestamp"), 10, 64)
		assert.True(t, webhook.Verify(key, g.header.Get("webhook-id"), time.Unix(secs, 0), g.body, g.header.Get("webhook-signature")))
	}
}

func TestSenderStops(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		statuses []int
		attempts int
	}{
		{"AfterMaxAttempts", []int{500, 500, 500, 500}, 3},
		{"OnGone", []int{410, 500, 500}, 1},
		{"OnARedirect", []int{302, 302, 302}, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			rc, srv := newReceiver(c.statuses...)
			defer srv.Close()
			s, err := webhook.New(srv.URL, distinctiveSecret, &webhook.Config{Backoff: noWait, MaxAttempts: 3})
			require.NoError(t, err)
			s.NotifyApproval(context.Background(), testEvent())
			rc.await(t, c.attempts)
			// Close waits for the delivery to end: nothing more comes after.
			s.Close(context.Background())
			rc.mu.Lock()
			defer rc.mu.Unlock()
			assert.Len(t, rc.got, c.attempts)
		})
	}
}

func TestNotifyNeverWaitsForTheReceiver(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var calls sync.WaitGroup
	calls.Add(1)
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(calls.Done)
		<-release
	}))
	defer srv.Close()
	logs := &testproc.SyncBuffer{}
	s, err := webhook.New(srv.URL, distinctiveSecret, &webhook.Config{
		QueueSize: 1, Logger: slog.New(slog.NewTextHandler(logs, nil)),
	})
	require.NoError(t, err)

	// The receiver holds the first delivery; the queue takes one more;
	// the rest are dropped. Every notification returns at once all the same.
	for range 5 {
		s.NotifyApproval(context.Background(), testEvent())
	}
	calls.Wait()
	close(release)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s.Close(ctx)
	assert.Contains(t, logs.String(), "queue full")
}

func TestSecretAndURLPathNeverLogged(t *testing.T) {
	t.Parallel()
	_, srv := newReceiver(500, 500, 500)
	defer srv.Close()
	logs := &testproc.SyncBuffer{}
	s, err := webhook.New(srv.URL+"/hooks/path-token-that-is-a-secret-too", distinctiveSecret, &webhook.Config{
		Backoff: noWait, MaxAttempts: 3, Logger: slog.New(slog.NewJSONHandler(logs, nil)),
	})
	require.NoError(t, err)
	s.NotifyApproval(context.Background(), testEvent())
	s.Close(context.Background())

	out := logs.String()
	assert.Contains(t, out, "giving up", "the failure is logged")
	for _, leak := range []string{"ZGlzdGluY3", "whsec_", "path-token-that-is-a-secret-too"} {
		assert.NotContains(t, out, leak)
	}
	assert.False(t, bytes.Contains([]byte(out), []byte("distinctive-secret")))
}

func TestSenderSendsABudgetThresholdWithItsOwnID(t *testing.T) {
	t.Parallel()
	rc, srv := newReceiver(http.StatusInternalServerError)
	defer srv.Close()
	s, err := webhook.New(srv.URL, distinctiveSecret, &webhook.Config{Backoff: noWait})
	require.NoError(t, err)
	defer s.Close(context.Background())

	berlin, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)
	const id = "budget.threshold:search-team:daily:0.8:2026-11-28"
	s.NotifyApproval(context.Background(), toolgatetype.ApprovalEvent{
		Type:      toolgatetype.BudgetThresholdCrossed,
		Timestamp: time.Date(2026, 11, 28, 15, 4, 5, 0, berlin),
		ID:        id,
		Threshold: &toolgatetype.BudgetThreshold{
			Budget:      toolgatetype.BudgetRef{ID: "search-team", Name: "Search team"},
			Window:      toolgatetype.BudgetDaily,
			Fraction:    0.8,
			UsedUSD:     "40.5000",
			LimitUSD:    "50.0000",
			PeriodStart: time.Date(2026, 11, 28, 0, 0, 0, 0, berlin),
			ResetsAt:    time.Date(2026, 11, 29, 0, 0, 0, 0, berlin),
		},
	})
	got := rc.await(t, 2)
	require.Len(t, got, 2, "one failure, then delivered")
	key, err := webhook.ParseSecret(distinctiveSecret)
	require.NoError(t, err)
	for _, g := range got {
		assert.Equal(t, id, g.header.Get("webhook-id"), "the crossing's stable id, on every attempt")
		secs, err := strconv.ParseInt(g.header.Get("webhook-timestamp"), 10, 64)
		require.NoError(t, err)
		assert.True(t, webhook.Verify(key, id, time.Unix(secs, 0), g.body, g.header.Get("webhook-signature")))
	}
	assert.JSONEq(t, `{
		"type": "budget.threshold",
		"timestamp": "2026-11-28T14:04:05Z",
		"data": {
			"budget": {"id": "search-team", "name": "Search team"},
			"window": "daily",
			"fraction": 0.8,
			"usedUsd": "40.5000",
			"limitUsd": "50.0000",
			"periodStart": "2026-11-28T00:00:00+01:00",
			"resetsAt": "2026-11-29T00:00:00+01:00"
		}
	}`, string(got[0].body))
}
