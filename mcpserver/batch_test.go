package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"github.com/toolgate/toolgate/mcpserver"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"
)

// batchProtocol is the one protocol revision whose sessions take JSON-RPC
// batches.
const batchProtocol = "2025-03-26"

// TestHTTPBatchHoldsAtMost100Messages: in a session of the revision that
// takes batches, a batch of 101 tools/call is refused with 400 and a
// JSON-RPC error, and none of its calls runs; a batch of 100 runs all 100.
func TestHTTPBatchHoldsAtMost100Messages(t *testing.T) {
	t.Parallel()
	// Limits wide enough for 100 calls in a minute, so that each call of
	// the batch that is taken reaches the upstream.
	gw := toolgatetest.New(t, &toolgatetest.Options{Tools: []*registry.Tool{coveredEcho()},
		Config: controls("alice", toolgatetype.SpendControls{RateLimitPerMinute: intp(1000), RateLimitPerHour: intp(1000)})})
	url, _, _ := mcpHTTP(t, gw)
	session := batchSession(t, url)

	calls := func(n int) string {
		msgs := make([]string, n)
		for i := range msgs {
			msgs[i] = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"v":"m%d"}}}`, i+1, i+1)
		}
		return "[" + strings.Join(msgs, ",") + "]"
	}

	status, answers := postBatch(t, url, session, calls(101))
	require.Equal(t, http.StatusBadRequest, status, "%v", answers)
	require.Len(t, answers, 1)
	var refusal struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal(answers[0], &refusal), "%s", answers[0])
	assert.Equal(t, -32600, refusal.Error.Code)
	assert.Equal(t, "a JSON-RPC batch may hold at most 100 messages", refusal.Error.Message)
	gw.Upstream.RequireCalls(t, 0)

	status, answers = postBatch(t, url, session, calls(100))
	require.Equal(t, http.StatusOK, status, "%v", answers)
	require.Len(t, answers, 100)
	for _, a := range answers {
		var msg struct {
			Result mcp.CallToolResult `json:"result"`
		}
		require.NoError(t, json.Unmarshal(a, &msg), "%s", a)
		assert.False(t, msg.Result.IsError, "%s", a)
	}
	gw.Upstream.RequireCalls(t, 100)

	// A batch of 101 pings, no call among them, is refused as well.
	pings := make([]string, 101)
	for i := range pings {
		pings[i] = fmt.Sprintf(`{"jsonrpc":"2.0","id":"p%d","method":"ping"}`, i)
	}
	status, _ = postBatch(t, url, session, "["+strings.Join(pings, ",")+"]")
	assert.Equal(t, http.StatusBadRequest, status)
}

// batchSession begins alice's session at batchProtocol and returns its id.
func batchSession(t *testing.T, url string) string {
	t.Helper()
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + batchProtocol +
		`","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	status, answers, header := postRaw(t, url, "", init)
	require.Equal(t, http.StatusOK, status, "%v", answers)
	require.Len(t, answers, 1)
	assert.Contains(t, string(answers[0]), `"protocolVersion":"`+batchProtocol+`"`, "the session speaks the revision with batches")
	session := header.Get("Mcp-Session-Id")
	require.NotEmpty(t, session)
	status, _, _ = postRaw(t, url, session, initialized)
	require.Equal(t, http.StatusAccepted, status)
	return session
}

// postBatch posts body in session and returns the status and every message
// answered.
func postBatch(t *testing.T, url, session, body string) (int, []json.RawMessage) {
	t.Helper()
	status, answers, _ := postRaw(t, url, session, body)
	return status, answers
}

// postRaw posts body as alice at batchProtocol and reads every message of
// the answer, whether a JSON value (an array is read as its messages) or an
// event stream to its end.
func postRaw(t *testing.T, url, session, body string) (int, []json.RawMessage, http.Header) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+aliceKey)
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", batchProtocol)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var msgs []json.RawMessage
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 4<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok && data != "" {
				msgs = append(msgs, splitMessages(t, []byte(data))...)
			}
		}
		require.NoError(t, sc.Err())
		return resp.StatusCode, msgs, resp.Header
	}
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	if len(strings.TrimSpace(string(raw))) > 0 {
		msgs = splitMessages(t, raw)
	}
	return resp.StatusCode, msgs, resp.Header
}

// splitMessages is the messages of one JSON value: an array's elements, or
// the value itself.
func splitMessages(t *testing.T, raw []byte) []json.RawMessage {
	t.Helper()
	var batch []json.RawMessage
	if json.Unmarshal(raw, &batch) == nil {
		return batch
	}
	if !json.Valid(raw) {
		// Not JSON: the SDK's own refusals are plain text.
		return []json.RawMessage{json.RawMessage(fmt.Sprintf("%q", raw))}
	}
	return []json.RawMessage{raw}
}

// TestHTTPBatchCapHoldsWithDataAfterTheBatch: the SDK reads a body with a
// decoder that stops after the first JSON value, so a batch followed by
// anything else ("[...] x", "[...]]") is still a batch to it, while
// encoding/json refuses the whole body. A batch of 101 calls so followed
// must be refused like any other, none of its calls run.
func TestHTTPBatchCapHoldsWithDataAfterTheBatch(t *testing.T) {
	t.Parallel()
	gw := toolgatetest.New(t, &toolgatetest.Options{Tools: []*registry.Tool{coveredEcho()},
		Config: controls("alice", toolgatetype.SpendControls{RateLimitPerMinute: intp(1000), RateLimitPerHour: intp(1000)})})
	url, _, _ := mcpHTTP(t, gw)
	session := batchSession(t, url)
	msgs := make([]string, 101)
	for i := range msgs {
		msgs[i] = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"v":"m%d"}}}`, i+1, i+1)
	}
	batch := "[" + strings.Join(msgs, ",") + "]"
	for _, tail := range []string{" x", "]", "[]", "}"} {
		status, answers := postBatch(t, url, session, batch+tail)
		assert.Equal(t, http.StatusBadRequest, status, "tail %q: %d answers", tail, len(answers))
	}
	gw.Upstream.RequireCalls(t, 0)
}

// TestStdioBatchHoldsAtMost100Messages: over stdio (what "toolgate mcp"
// serves), a session of the revision that takes batches is held to the
// same 100 messages: a batch of 101 calls is answered with an error, none
// of its calls runs, and the session goes on.
func TestStdioBatchHoldsAtMost100Messages(t *testing.T) {
	t.Parallel()
	gw := toolgatetest.New(t, &toolgatetest.Options{Tools: []*registry.Tool{coveredEcho()},
		Config: controls("alice", toolgatetype.SpendControls{RateLimitPerMinute: intp(1000), RateLimitPerHour: intp(1000)})})
	srv, err := mcpserver.NewServer(gw.Gateway, "alice", nil)
	require.NoError(t, err)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Run(ctx, &mcp.IOTransport{Reader: inR, Writer: outW})
	}()
	t.Cleanup(func() { cancel(); _ = inW.Close(); _ = outR.Close(); <-done })
	lines := bufio.NewScanner(outR)
	lines.Buffer(nil, 4<<20)
	send := func(s string) {
		t.Helper()
		_, err := io.WriteString(inW, s+"\n")
		require.NoError(t, err)
	}
	// next is the next answer that is no notification.
	next := func() string {
		t.Helper()
		for lines.Scan() {
			if l := lines.Text(); !strings.Contains(l, `"method":"notifications/`) {
				return l
			}
		}
		t.Fatalf("no answer: %v", lines.Err())
		return ""
	}
	send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"` + batchProtocol +
		`","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	require.Contains(t, next(), `"protocolVersion":"`+batchProtocol+`"`)
	send(initialized)

	msgs := make([]string, 101)
	for i := range msgs {
		msgs[i] = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"v":"m%d"}}}`, i+1, i+1)
	}
	send("[" + strings.Join(msgs, ",") + "]")
	answer := next()
	assert.True(t, strings.HasPrefix(answer, `{"jsonrpc":"2.0","error":`), "the batch is refused: %.200s", answer)
	gw.Upstream.RequireCalls(t, 0)
	send(`{"jsonrpc":"2.0","id":"after","method":"ping"}`)
	assert.Contains(t, next(), `"id":"after"`, "the session goes on")
	// A batch of 100 runs.
	send("[" + strings.Join(msgs[:100], ",") + "]")
	assert.Contains(t, next(), `"id":100`)
	gw.Upstream.RequireCalls(t, 100)
}

// TestHTTPRequestKeyIsTheTransportsWhateverTheCase: the SDK reads a
// message's members by their exact names, so a "Method" member beside
// "method" changes nothing for it; encoding/json's case-blind match must
// not let it hide the call from the keying either, which would leave the
// request key the client wrote in _meta. Two requests with their own ids
// are two calls, whatever key the client writes.
func TestHTTPRequestKeyIsTheTransportsWhateverTheCase(t *testing.T) {
	t.Parallel()
	gw := toolgatetest.New(t, &toolgatetest.Options{Tools: []*registry.Tool{coveredEcho()}})
	url, _, _ := mcpHTTP(t, gw)
	session := batchSession(t, url)
	for id := 8; id <= 9; id++ {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","Method":"ping",`+
			`"params":{"name":"echo","arguments":{"v":"hi"},"_meta":{"toolgate/requestKey":"x 7"}}}`, id)
		status, answers := postBatch(t, url, session, body)
		require.Equal(t, http.StatusOK, status, "%s", answers)
	}
	gw.Upstream.RequireCalls(t, 2)
}
