package toolgate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/storage/memory"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"
	"github.com/toolgate/toolgate/upstream"
)

// ticketManifest is a tool that changes something at its provider: a POST
// that opens a ticket. Whether it is retry-safe is the test's to say.
func ticketManifest(idempotent bool) string {
	return fmt.Sprintf(`{
  "schemaVersion": "toolgate.tool/v1",
  "slug": "open-ticket",
  "name": "Open Ticket",
  "description": "Opens a support ticket",
  "category": "Support",
  "version": 1,
  "provider": {"name": "Acme Support"},
  "endpoint": {"origin": "https://tickets.acme.test", "method": "POST", "path": "/tickets", "body": "input"},
  "pricing": {"type": "per_call", "amount": "0.0500"},
  "capabilities": {"readOnly": false, "idempotent": %t, "writesExternalData": true, "dataRetention": "stored"},
  "inputSchema": {"type": "object", "required": ["title"], "additionalProperties": false,
                  "properties": {"title": {"type": "string"}}},
  "outputSchema": {"type": "object", "required": ["id"], "additionalProperties": false,
                   "properties": {"id": {"type": "string"}}}
}`, idempotent)
}

// ticketProvider is a real HTTP server that reads each whole request and
// then, for the first `drops` requests, does what a provider that dies
// mid-call does: closes the connection without a word (hangUp) or never
// answers (hang). Later requests get a ticket.
type ticketProvider struct {
	srv      *httptest.Server
	requests atomic.Int64
}

func newTicketProvider(t *testing.T, drops int64, hang bool) *ticketProvider {
	p := &ticketProvider{}
	release := make(chan struct{})
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		require.NoError(t, json.NewDecoder(r.Body).Decode(&body))
		n := p.requests.Add(1)
		if n <= drops {
			if hang {
				<-release
				return
			}
			conn, _, err := w.(http.Hijacker).Hijack()
			require.NoError(t, err)
			conn.Close()
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"T-%d"}`, n)
	}))
	t.Cleanup(func() { close(release); p.srv.Close() })
	return p
}

// ticketGateway serves the ticket tool against provider (its URL), with a
// short upstream deadline so that a provider that never answers is given
// up on quickly.
func ticketGateway(t *testing.T, providerURL string, idempotent bool) *toolgate.Gateway {
	t.Helper()
	return ticketGatewayWith(t, providerURL, idempotent, nil)
}

// ticketGatewayWith is ticketGateway with mut applied to its config.
func ticketGatewayWith(t *testing.T, providerURL string, idempotent bool, mut func(*toolgate.Config)) *toolgate.Gateway {
	t.Helper()
	reg := registry.New()
	tool, err := registry.ParseManifest("open-ticket.json", []byte(ticketManifest(idempotent)),
		&registry.ParseOptions{OperatorOrigins: map[string]string{"open-ticket": providerURL}})
	require.NoError(t, err)
	require.NoError(t, reg.Register(tool))
	require.NoError(t, reg.SetOrigin("open-ticket", providerURL))
	require.NoError(t, reg.SetTrust("open-ticket", registry.Trust{PaymentVerified: registry.Bool(true), EndpointVerified: registry.Bool(true)}))
	cfg := &toolgate.Config{
		Registry: reg,
		Clock:    toolgatetest.NewFakeClock(toolgatetest.DefaultStart),
		Upstream: &upstream.Config{Timeout: 400 * time.Millisecond},
	}
	if mut != nil {
		mut(cfg)
	}
	gw, err := toolgate.New(memory.New(), cfg)
	require.NoError(t, err)
	return gw
}

// callTicket quotes the ticket tool and calls it under key; retryTicket
// sends the same request again, as an agent retrying it would.
func callTicket(t *testing.T, gw *toolgate.Gateway, key string) (*toolgatetype.CallResult, toolgatetype.CallRequest) {
	t.Helper()
	q, err := gw.Quote(context.Background(), "alice", "open-ticket")
	require.NoError(t, err)
	req := toolgatetest.ApprovedRequest(q, `{"title":"printer on fire"}`, key)
	return retryTicket(t, gw, req), req
}

func retryTicket(t *testing.T, gw *toolgate.Gateway, req toolgatetype.CallRequest) *toolgatetype.CallResult {
	t.Helper()
	res, err := gw.Call(context.Background(), "alice", req)
	require.NoError(t, err)
	return res
}

// A provider that received a POST and then went silent may have opened the
// ticket: the call is ambiguous, never failed, and never sent again, even
// when the agent retries with the same key twenty times.
func TestANonRetrySafeCallThatMayHaveRunIsAmbiguous(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		hang bool
	}{{"the provider closes the connection", false}, {"the provider never answers", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := newTicketProvider(t, 1000, tc.hang)
			gw := ticketGateway(t, p.srv.URL, false)

			first, req := callTicket(t, gw, "ticket-1")
			require.Equal(t, toolgatetype.StatusAmbiguous, first.Execution.Status)
			assert.JSONEq(t, `null`, string(first.Execution.Output))
			require.NotNil(t, first.Execution.Error)
			assert.Equal(t, toolgatetype.CodeOutcomeUnknown, first.Execution.Error.Code)
			assert.Contains(t, first.Execution.Error.Message, "Do not call it again")
			assert.Contains(t, first.Execution.Error.Message, first.Execution.ID)
			assert.EqualValues(t, 1, p.requests.Load())

			for i := 0; i < 20; i++ {
				again := retryTicket(t, gw, req)
				require.True(t, again.Replayed)
				require.Equal(t, string(first.Body), string(again.Body), "a replay returns the ambiguous execution byte for byte")
			}
			assert.EqualValues(t, 1, p.requests.Load(), "the provider saw the request once")
		})
	}
}

// A tool that declares itself idempotent may be sent again: the gateway
// retries after the provider hung up, and the call completes.
func TestARetrySafeCallIsRetriedAndCompletes(t *testing.T) {
	t.Parallel()
	p := newTicketProvider(t, 1, false)
	gw := ticketGateway(t, p.srv.URL, true)

	res, _ := callTicket(t, gw, "ticket-1")
	require.Equal(t, toolgatetype.StatusCompleted, res.Execution.Status, "%s", res.Body)
	assert.JSONEq(t, `{"id":"T-2"}`, string(res.Execution.Output))
	assert.EqualValues(t, 2, p.requests.Load())
}

// A request that provably never left (nothing listens where the provider
// should be) is failed, as before: nothing can have run.
func TestACallThatNeverLeftIsFailed(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close()) // connections to it are now refused
	gw := ticketGateway(t, "http://"+addr, false)

	res, _ := callTicket(t, gw, "ticket-1")
	require.Equal(t, toolgatetype.StatusFailed, res.Execution.Status, "%s", res.Body)
	assert.Equal(t, "upstream_unavailable", res.Execution.Error.Code)
}

// The provider's half-written answer is cut off: the ticket was opened,
// but the gateway cannot know it.
func TestACutOffAnswerIsAmbiguous(t *testing.T) {
	t.Parallel()
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		conn, buf, err := w.(http.Hijacker).Hijack()
		require.NoError(t, err)
		defer conn.Close()
		fmt.Fprint(buf, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"id\":")
		require.NoError(t, buf.Flush())
	}))
	t.Cleanup(srv.Close)
	gw := ticketGateway(t, srv.URL, false)

	res, _ := callTicket(t, gw, "ticket-1")
	require.Equal(t, toolgatetype.StatusAmbiguous, res.Execution.Status, "%s", res.Body)
	assert.True(t, strings.Contains(res.Execution.Error.Message, "cut off"), res.Execution.Error.Message)
	assert.EqualValues(t, 1, requests.Load())
}
