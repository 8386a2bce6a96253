package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/testproc"
	"github.com/toolgate/toolgate/webhook"
)

// TestREADMEWebhookReceiver builds the README's webhook receiver as it is
// written, gives it a secret made by the README's command, and has the
// server send it a real event: the receiver verifies it. Then the same
// delivery again is handled once, and a delivery whose body was changed,
// or whose timestamp is older than the tolerance though rightly signed,
// is refused.
func TestREADMEWebhookReceiver(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds a program with the go tool")
	}
	section := readmeSection(t, "Events that arrive")
	_, recipe, found := strings.Cut(section, "\n### Receiving webhooks\n")
	require.True(t, found, "the README says how to receive webhooks")
	blocks := shellBlocks(recipe)
	require.Len(t, blocks, 1, "how to make a secret")
	_, program, found := strings.Cut(recipe, "```go\n")
	require.True(t, found, "a receiver in Go")
	program, _, _ = strings.Cut(program, "```")

	secret := "whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" // 24 bytes, when openssl is missing
	if _, err := exec.LookPath("openssl"); err == nil {
		out, err := exec.Command("sh", "-c", blocks[0]).Output()
		require.NoError(t, err)
		secret = strings.TrimSpace(string(out))
	}
	key, err := webhook.ParseSecret(secret)
	require.NoError(t, err, "the README's command makes a secret the server takes")

	receiver := startReceiver(t, program, secret)
	receiverURL := "http://" + strings.TrimPrefix(receiver.waitLine("listening on ", 60*time.Second), "listening on ")

	// Between the server and the receiver, a recorder of what was sent.
	var mu sync.Mutex
	var deliveries []hookDelivery
	recorder := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		deliveries = append(deliveries, hookDelivery{header: r.Header.Clone(), body: body})
		mu.Unlock()
		resp := deliver(t, receiverURL+r.URL.Path, r.Header, body)
		w.WriteHeader(resp)
	}))
	defer recorder.Close()

	agentKey, patKey := randomKey(t, "tg_test_agent_"), randomKey(t, "tg_test_pat_")
	path := writeConfig(t, map[string]any{
		"listen":     "127.0.0.1:0",
		"principals": []any{map[string]any{"id": "agent", "apiKeys": []string{agentKey}, "approvalMode": "approver"}},
		"approvers":  []any{map[string]any{"id": "pat", "keys": []string{patKey}, "principals": []string{"agent"}}},
		"approvals":  map[string]any{"webhookUrl": recorder.URL + "/toolgate", "webhookSecret": secret},
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stdout, stderr := &testproc.SyncBuffer{}, &testproc.SyncBuffer{}
	exited := make(chan int, 1)
	go func() { exited <- run(ctx, []string{"-config", path, "-offline"}, noEnv, stdout, stderr) }()
	server := &process{t: t, stdout: stdout, stderr: stderr, exited: make(chan struct{})}
	agent := client{t: t, key: agentKey}
	agent.base = strings.TrimPrefix(server.waitLine("toolgate listening on ", 10*time.Second), "toolgate listening on ")

	quoteID, _, _ := agent.quote("goal-data")
	r := agent.do(http.MethodPost, "/v1/approval-requests", map[string]any{"quoteId": quoteID, "input": map[string]any{"goal": "g", "step": 1}})
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)

	line := receiver.waitLine("verified ", 20*time.Second)
	fields := strings.Fields(line)
	require.Len(t, fields, 3, line)
	assert.Equal(t, "approval_request.created", fields[1], "the receiver verified the server's event")
	id := fields[2]
	mu.Lock()
	sent := deliveries[0]
	mu.Unlock()
	assert.Equal(t, id, sent.header.Get("webhook-id"))

	// A retry of the same event: answered 2xx, handled once.
	assert.Equal(t, http.StatusOK, deliver(t, receiverURL+"/toolgate", sent.header, sent.body))
	receiver.waitLine("already handled "+id, 10*time.Second)

	// A body changed on the way: refused.
	tampered := bytes.Replace(sent.body, []byte(`"pending"`), []byte(`"approved"`), 1)
	require.NotEqual(t, sent.body, tampered)
	assert.Equal(t, http.StatusUnauthorized, deliver(t, receiverURL+"/toolgate", sent.header, tampered))

	// Rightly signed, but recorded 10 minutes ago and played again: refused.
	old := time.Now().Add(-10 * time.Minute)
	replayed := sent.header.Clone()
	replayed.Set("webhook-id", "msg_replayed")
	replayed.Set("webhook-timestamp", strconv.FormatInt(old.Unix(), 10))
	replayed.Set("webhook-signature", webhook.Sign(key, "msg_replayed", old, sent.body))
	assert.Equal(t, http.StatusUnauthorized, deliver(t, receiverURL+"/toolgate", replayed, sent.body))

	cancel()
	assert.Equal(t, 0, <-exited, "%s", stderr.String())
	assert.NotContains(t, stderr.String(), strings.TrimPrefix(secret, "whsec_"), "the secret is never logged")
}

// deliver POSTs body with header to url and returns the answer's status.
func deliver(t *testing.T, url string, header http.Header, body []byte) int {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Error(err)
		return 0
	}
	for _, name := range []string{"Content-Type", "Webhook-Id", "Webhook-Timestamp", "Webhook-Signature"} {
		req.Header.Set(name, header.Get(name))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// startReceiver builds program, a main package using the standard
// library only, and runs it listening on a free port with the secret.
func startReceiver(t *testing.T, program, secret string) *process {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte(program), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module receiver\n\ngo 1.22\n"), 0o600))
	bin := filepath.Join(dir, "receiver")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = dir
	build.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=", "GOTOOLCHAIN=local")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "the README's receiver builds: %s", out)

	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "LISTEN=127.0.0.1:0", "TOOLGATE_WEBHOOK_SECRET="+secret)
	p := &process{t: t, cmd: cmd, stdout: &testproc.SyncBuffer{}, stderr: &testproc.SyncBuffer{}, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.stdout, p.stderr
	require.NoError(t, cmd.Start())
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.exited
		if t.Failed() {
			t.Logf("receiver stdout:\n%s\nreceiver stderr:\n%s", p.stdout, p.stderr)
		}
	})
	return p
}
