package webhook_test

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolgate/toolgate/internal/events"
	"github.com/toolgate/toolgate/outbox"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/storage/memory"
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

// testEvent is an approval request's event as the outbox hands it to a
// sender, its data carrying an approveUrl a caller could have chosen.
func testEvent(t *testing.T) storage.Event {
	t.Helper()
	ev, err := events.ApprovalRequest(toolgatetype.ApprovalRequestCreated, toolgatetype.ApprovalRequest{
		ID: "0b6f3a52-9c1e-4a4e-9c2a-6e1f0d3c2b1a", Status: toolgatetype.ApprovalStatusPending, Principal: "agent",
		Tool:       toolgatetype.ToolRef{ID: "t1", Slug: "echo", Name: "Echo"},
		Input:      json.RawMessage(`{"v":"hi"}`),
		ApproveURL: "https://caller-controlled.example/phish",
	}, time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC))
	require.NoError(t, err)
	return storage.Event{ID: ev.ID, Type: ev.Type, Payload: ev.Payload, CreatedAt: ev.CreatedAt, Attempts: 1}
}

func TestSenderDeliversSignedEvents(t *testing.T) {
	t.Parallel()
	rc, srv := newReceiver()
	defer srv.Close()
	s, err := webhook.New(srv.URL+"/hooks/toolgate", distinctiveSecret, &webhook.Config{
		ApproveURL: func(id string) string { return "https://gate.example/approvals/" + id },
	})
	require.NoError(t, err)
	ev := testEvent(t)
	require.NoError(t, s.Send(t.Context(), ev))
	got := rc.await(t, 1)
	require.Len(t, got, 1)
	h := got[0].header
	assert.Equal(t, "approval_request.created:0b6f3a52-9c1e-4a4e-9c2a-6e1f0d3c2b1a", h.Get("webhook-id"), "the event's stable id")
	key, err := webhook.ParseSecret(distinctiveSecret)
	require.NoError(t, err)
	secs, err := strconv.ParseInt(h.Get("webhook-timestamp"), 10, 64)
	require.NoError(t, err)
	assert.True(t, webhook.Verify(key, h.Get("webhook-id"), time.Unix(secs, 0), got[0].body, h.Get("webhook-signature")))
	var body struct {
		Type string `json:"type"`
		Data struct {
			ID         string `json:"id"`
			ApproveURL string `json:"approveUrl"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(got[0].body, &body))
	assert.Equal(t, "approval_request.created", body.Type)
	assert.Equal(t, "https://gate.example/approvals/0b6f3a52-9c1e-4a4e-9c2a-6e1f0d3c2b1a", body.Data.ApproveURL, "the operator's page, never the caller's")
	assert.NotContains(t, string(got[0].body), "caller-controlled")

	// A retry is the same id, signed anew.
	require.NoError(t, s.Send(t.Context(), ev))
	got = rc.await(t, 1)
	assert.Equal(t, got[0].header.Get("webhook-id"), got[1].header.Get("webhook-id"))
}

func TestSenderSaysHowADeliveryFailed(t *testing.T) {
	t.Parallel()
	rc, srv := newReceiver(http.StatusGone, http.StatusServiceUnavailable)
	defer srv.Close()
	s, err := webhook.New(srv.URL+"/secret-path", distinctiveSecret, nil)
	require.NoError(t, err)
	ev := testEvent(t)
	err = s.Send(t.Context(), ev)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "410", "gone: failed for good")
	err = s.Send(t.Context(), ev)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "503")
	rc.await(t, 2)

	srv.Close()
	err = s.Send(t.Context(), ev)
	require.Error(t, err, "nobody listens")
	for _, leak := range []string{"secret-path", "ZGlzdGluY3"} {
		assert.NotContains(t, err.Error(), leak, "an error, which the outbox keeps and logs, names no path nor secret")
	}
}

// The outbox retries what the sender could not deliver: a receiver down
// for a while hears of the event, under its one id, once it is back.
func TestDeliveredThroughTheOutboxAfterTheReceiverWasDown(t *testing.T) {
	t.Parallel()
	rc, srv := newReceiver(http.StatusServiceUnavailable, http.StatusBadGateway)
	defer srv.Close()
	s, err := webhook.New(srv.URL, distinctiveSecret, nil)
	require.NoError(t, err)
	store := memory.New()
	ev := testEvent(t)
	_, err = store.AddEvent(t.Context(), storage.NewEvent{ID: ev.ID, Type: ev.Type, Payload: ev.Payload, CreatedAt: ev.CreatedAt})
	require.NoError(t, err)
	now := ev.CreatedAt
	d := outbox.New(store, s, &outbox.Config{Now: func() time.Time { return now }})
	for range 3 {
		n, err := d.DeliverDue(t.Context())
		require.NoError(t, err)
		require.Equal(t, 1, n)
		now = now.Add(10 * time.Minute)
	}
	got := rc.await(t, 3)
	for _, g := range got {
		assert.Equal(t, ev.ID, g.header.Get("webhook-id"))
	}
	st, err := store.EventStats(t.Context())
	require.NoError(t, err)
	assert.Equal(t, map[string]int64{"approval_request.created": 1}, st.Delivered)
	listed, err := store.ListEvents(t.Context(), storage.EventFilter{Limit: 10})
	require.NoError(t, err)
	assert.Equal(t, 3, listed[0].Attempts)
}
