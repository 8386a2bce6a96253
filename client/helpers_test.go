package client

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/apikey"
	"github.com/toolgate/toolgate/httpapi"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"
)

// The keys of the test gateway's parties, each distinctive so that a test
// can tell it never leaks: alice, an agent whose user approves (caller
// mode); agent, whose calls pat, a person, approves (approver mode); and
// sam, who approves for another principal only.
const (
	aliceKey = "tg_secret_alice_7f3a9c2e51d04b68"
	agentKey = "tg_secret_agent_0b5e8d21c7a94f36"
	patKey   = "tg_secret_pat_approver_93c1e07a4d6b"
	samKey   = "tg_secret_sam_approver_5a28f4b9e1c3"
)

// keyOf maps each party to its key.
var keyOf = map[string]string{"alice": aliceKey, "agent": agentKey, "pat": patKey, "sam": samKey}

// testApprovers is who approves for whom: pat for agent and alice, sam for
// a principal with no key here.
var testApprovers = toolgatetype.StaticApprovers{
	Modes:     map[string]toolgatetype.ApprovalMode{"agent": toolgatetype.ApprovalModeApprover},
	Approvers: map[string][]string{"pat": {"agent", "alice"}, "sam": {"other"}},
}

// testTools are three echo tools: "echo" (free, its digest must be
// approved), "paid" ($0.10 + fee, covered: no approval asked) and
// "blocked" (paid, neither its endpoint nor its provider's payment verified).
func testTools() []*registry.Tool {
	echo := toolgatetest.EchoTool()
	paid := toolgatetest.Priced(toolgatetest.EchoTool(), "0.1000")
	paid.Slug, paid.Name = "paid", "Echo paid"
	blocked := toolgatetest.Priced(toolgatetest.EchoTool(), "0.1000")
	blocked.Slug, blocked.Name = "blocked", "Echo blocked"
	blocked.Endpoint.Verified, blocked.Provider.PaymentVerified = false, false
	return []*registry.Tool{echo, paid, blocked}
}

// env is a gateway served by httpapi on an httptest server, with a
// fault-injecting proxy in front of it, and clients of it whose waits
// between attempts are recorded and move the gateway's fake clock instead
// of passing.
type env struct {
	t     *testing.T
	gw    *toolgatetest.Gateway
	api   *httptest.Server // the gateway's HTTP API
	proxy *faultProxy
	front *httptest.Server // the proxy

	mu     sync.Mutex
	waits  []time.Duration
	onWait func(ctx context.Context, d time.Duration) error
}

type envOptions struct {
	config *toolgate.Config
	store  storage.Store
	tools  []*registry.Tool
}

func newEnv(t *testing.T, o *envOptions) *env {
	t.Helper()
	if o == nil {
		o = &envOptions{}
	}
	tools := o.tools
	if tools == nil {
		tools = testTools()
	}
	cfg := toolgate.Config{}
	if o.config != nil {
		cfg = *o.config
	}
	if cfg.Approvers == nil {
		cfg.Approvers = testApprovers
	}
	gw := toolgatetest.New(t, &toolgatetest.Options{Tools: tools, Config: &cfg, Store: o.store})
	keys := apikey.NewKeyStore()
	require.NoError(t, keys.AddKey("alice", aliceKey))
	require.NoError(t, keys.AddKey("agent", agentKey))
	require.NoError(t, keys.AddApproverKey("pat", patKey))
	require.NoError(t, keys.AddApproverKey("sam", samKey))
	e := &env{t: t, gw: gw}
	e.api = httptest.NewServer(httpapi.NewHandler(gw.Gateway, &httpapi.Options{Authenticator: keys}))
	t.Cleanup(e.api.Close)
	target, err := url.Parse(e.api.URL)
	require.NoError(t, err)
	e.proxy = &faultProxy{forward: httputil.NewSingleHostReverseProxy(target)}
	e.front = httptest.NewServer(e.proxy)
	t.Cleanup(e.front.Close)
	return e
}

// client returns a client of the gateway through the proxy, as alice.
func (e *env) client(opts *Options) *Client {
	e.t.Helper()
	return e.clientAs("alice", opts)
}

// clientAs returns a client of the gateway through the proxy, holding the
// key of who: a principal or an approver.
func (e *env) clientAs(who string, opts *Options) *Client {
	e.t.Helper()
	key, ok := keyOf[who]
	require.True(e.t, ok, "no key for %s", who)
	return e.clientAt(e.front.URL, key, opts)
}

func (e *env) clientAt(baseURL, key string, opts *Options) *Client {
	e.t.Helper()
	c, err := New(baseURL, key, opts)
	require.NoError(e.t, err)
	c.sleep = e.sleep
	return c
}

// sleep stands in for the client's wait between attempts: it records the
// wait, moves the gateway's clock by it, and runs onWait when set.
func (e *env) sleep(ctx context.Context, d time.Duration) error {
	e.mu.Lock()
	e.waits = append(e.waits, d)
	hook := e.onWait
	e.mu.Unlock()
	e.gw.Clock.Advance(d)
	if hook != nil {
		return hook(ctx, d)
	}
	return ctx.Err()
}

func (e *env) recordedWaits() []time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]time.Duration(nil), e.waits...)
}

// quote quotes tool as alice, in process.
func (e *env) quote(tool string) *toolgatetype.QuoteResult {
	e.t.Helper()
	return e.gw.MustQuote(e.t, "alice", tool)
}

// askApproval quotes tool as agent and asks approval of a call of it with
// input {"v": v}, in process. It returns the call the grant approves once
// decided: the request's id is already its grant.
func (e *env) askApproval(tool, v string) (*toolgatetype.ApprovalRequest, toolgatetype.CallRequest) {
	e.t.Helper()
	req := approved(e.gw.MustQuote(e.t, "agent", tool), v)
	ar, err := e.gw.RequestApproval(context.Background(), "agent", toolgatetype.ApprovalInput{QuoteID: req.QuoteID, Input: req.Input})
	require.NoError(e.t, err)
	req.ApprovalGrant = ar.ID
	return ar, req
}

// decide decides approval request id as pat, in process.
func (e *env) decide(id string, approve bool) {
	e.t.Helper()
	_, err := e.gw.DecideApproval(context.Background(), "pat", id, toolgatetype.Decision{Approve: approve})
	require.NoError(e.t, err)
}

// approved is a call of tool under q with input {"v": v}, approving the
// quoted digest.
func approved(q *toolgatetype.QuoteResult, v string) toolgatetype.CallRequest {
	input, _ := json.Marshal(map[string]string{"v": v})
	req := toolgatetype.CallRequest{Tool: q.Tool.Slug, QuoteID: q.Quote.ID, Input: input}
	if q.Quote.ManifestDigest != nil {
		req.ApprovalDigest = *q.Quote.ManifestDigest
	}
	return req
}

// startInFlight starts req in process, as alice, and returns once the
// provider holds it. finish lets the provider answer and returns the
// call's outcome; it may be called more than once.
func (e *env) startInFlight(req toolgatetype.CallRequest) (finish func() (*toolgatetype.CallResult, error)) {
	entered, release := make(chan struct{}), make(chan struct{})
	provider := e.gw.Upstream.Handler()
	var held sync.Once
	e.gw.Upstream.HandleFunc(func(w http.ResponseWriter, r *http.Request) {
		held.Do(func() { close(entered); <-release })
		provider.ServeHTTP(w, r)
	})
	type outcome struct {
		res *toolgatetype.CallResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := e.gw.For("alice").Call(context.Background(), req)
		done <- outcome{res, err}
	}()
	<-entered
	return sync.OnceValues(func() (*toolgatetype.CallResult, error) {
		close(release)
		o := <-done
		return o.res, o.err
	})
}

// faultProxy passes requests on to the gateway, or, for as many requests as
// faults were queued, does what the next fault says instead. It keeps a
// copy of every request it got.
type faultProxy struct {
	forward http.Handler

	mu     sync.Mutex
	faults []fault
	seen   []seenRequest
}

// fault handles one request in the proxy's stead; forward reaches the
// gateway.
type fault func(w http.ResponseWriter, r *http.Request, forward http.Handler)

type seenRequest struct {
	method, path   string
	idempotencyKey string
	header         http.Header
	body           []byte
}

func (p *faultProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	p.mu.Lock()
	p.seen = append(p.seen, seenRequest{
		method: r.Method, path: r.URL.Path, idempotencyKey: r.Header.Get("Idempotency-Key"),
		header: r.Header.Clone(), body: body,
	})
	var f fault
	if len(p.faults) > 0 {
		f, p.faults = p.faults[0], p.faults[1:]
	}
	p.mu.Unlock()
	if f == nil {
		p.forward.ServeHTTP(w, r)
		return
	}
	f(w, r, p.forward)
}

// inject queues faults for the next requests.
func (p *faultProxy) inject(faults ...fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults = append(p.faults, faults...)
}

func (p *faultProxy) requests() []seenRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]seenRequest(nil), p.seen...)
}

// dropAnswer lets the gateway answer, then drops the connection before the
// answer reaches the client: the request had its effect, and the client
// cannot know.
func dropAnswer(w http.ResponseWriter, r *http.Request, forward http.Handler) {
	forward.ServeHTTP(httptest.NewRecorder(), r)
	conn, _, err := http.NewResponseController(w).Hijack()
	if err == nil {
		conn.Close()
	}
}

// reply answers in the gateway's stead, never reaching it.
func reply(status int, header http.Header, body string) fault {
	return func(w http.ResponseWriter, _ *http.Request, _ http.Handler) {
		for k, v := range header {
			w.Header()[k] = v
		}
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

// hang holds the request until the client gives up on it.
func hang(_ http.ResponseWriter, r *http.Request, _ http.Handler) {
	<-r.Context().Done()
}

func repeat(f fault, n int) []fault {
	out := make([]fault, n)
	for i := range out {
		out[i] = f
	}
	return out
}

func retryAfter(secs string) http.Header {
	return http.Header{"Retry-After": {secs}}
}
