package main

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// switchableReceiver answers every delivery with the status it is set
// to, and keeps the ids of those it took (2xx).
type switchableReceiver struct {
	status atomic.Int64
	mu     sync.Mutex
	took   []string
}

func (s *switchableReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	status := int(s.status.Load())
	if status < 300 {
		s.mu.Lock()
		s.took = append(s.took, r.Header.Get("webhook-id"))
		s.mu.Unlock()
	}
	w.WriteHeader(status)
}

func (s *switchableReceiver) ids() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.took...)
}

// TestEventsListAndRetryAFailedEvent: a receiver that answers 410 Gone
// fails an approval request's event for good; toolgate events list shows
// it failed, with its error; once the receiver is mended, toolgate events
// retry makes it pending again, and the running server delivers it under
// its one id.
func TestEventsListAndRetryAFailedEvent(t *testing.T) {
	t.Parallel()
	recv := &switchableReceiver{}
	recv.status.Store(http.StatusGone)
	receiver := httptest.NewServer(recv)
	t.Cleanup(receiver.Close)
	agentKey := randomKey(t, "tg_test_events_agent_")
	patKey := randomKey(t, "tg_test_events_pat_")
	path := writeConfig(t, map[string]any{
		"listen":     "127.0.0.1:0",
		"storage":    "sqlite:" + filepath.Join(t.TempDir(), "events.db"),
		"principals": []any{map[string]any{"id": "agent", "apiKeys": []string{agentKey}, "approvalMode": "approver"}},
		"approvers":  []any{map[string]any{"id": "pat", "keys": []string{patKey}, "principals": []string{"agent"}}},
		"approvals":  map[string]any{"webhookUrl": receiver.URL + "/hooks", "webhookSecret": webhookSecret},
		"webhooks":   map[string]any{"retryFor": "1h"},
	})
	srv, base := startServer(t, []string{"-config", path, "-offline"})

	agent := client{t: t, base: base, key: agentKey}
	quoteID, _, _ := agent.quote("goal-data")
	r := agent.do(http.MethodPost, "/v1/approval-requests", map[string]any{"quoteId": quoteID, "input": map[string]any{"goal": "g", "step": 1}})
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	requestID := r.json(t)["id"].(string)
	eventID := "approval_request.created:" + requestID

	var failed map[string]eventJSON
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if failed = outboxEvents(t, path, "failed", ""); len(failed) > 0 {
			break
		}
	}
	require.Len(t, failed, 1, "410 Gone fails the event for good")
	e := failed[eventID]
	assert.Equal(t, "approval_request.created", e.Type)
	assert.Equal(t, 1, e.Attempts)
	assert.Contains(t, e.LastError, "410")
	assert.Contains(t, string(e.Payload), requestID)

	code, out := runCLI(t, nil, "events", "list", "-config", path)
	require.Equal(t, exitOK, code, out)
	assert.Contains(t, out, eventID)
	assert.Contains(t, out, "failed")

	recv.status.Store(http.StatusNoContent)
	code, out = runCLI(t, nil, "events", "retry", eventID, "-config", path)
	require.Equal(t, exitOK, code, out)
	assert.Equal(t, "1 event(s) pending again\n", out)
	for deadline := time.Now().Add(20 * time.Second); len(recv.ids()) == 0 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	assert.Equal(t, []string{eventID}, recv.ids(), "delivered once, under its id")
	var delivered map[string]eventJSON
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if delivered = outboxEvents(t, path, "delivered", ""); len(delivered) > 0 {
			break
		}
	}
	require.Len(t, delivered, 1)
	assert.Equal(t, 2, delivered[eventID].Attempts)

	code, out = runCLI(t, nil, "events", "retry", "-failed", "-config", path)
	require.Equal(t, exitOK, code, out)
	assert.Equal(t, "0 event(s) pending again\n", out, "nothing failed any more")
	code, out = runCLI(t, nil, "events", "retry", "no-such-event", "-config", path)
	assert.Equal(t, exitFailed, code)
	assert.Contains(t, out, `no event "no-such-event"`)
	code, out = runCLI(t, nil, "events", "list", "-status", "lost", "-config", path)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, out, "-status must be pending, failed or delivered")

	memoryConfig := writeConfig(t, map[string]any{"listen": "127.0.0.1:0"})
	code, out = runCLI(t, nil, "events", "list", "-config", memoryConfig)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, out, "memory")

	assert.Equal(t, 0, srv.stop(exitTimeout))
	assert.NotContains(t, srv.stdout.String()+srv.stderr.String(), strings.TrimPrefix(webhookSecret, "whsec_"))
}
