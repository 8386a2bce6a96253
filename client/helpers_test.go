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
	"github.com/toolgate/toolgate/httpapi"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetest"
)

// aliceKey is distinctive, so that a test can tell it never leaks.
const aliceKey = "tg_secret_alice_7f3a9c2e51d04b68"

// testTools are three echo tools: "echo" (free, its digest must be
// approved), "paid" ($0.10 + fee, covered: no approval asked) and
// "blocked" (paid, provider not payment-verified).
func testTools() []*registry.Tool {
	echo := toolgatetest.EchoTool()
	paid := toolgatetest.Priced(toolgatetest.EchoTool(), "0.1000")
	paid.Slug, paid.Name = "paid", "Echo paid"
	paid.Endpoint.Verified, paid.Provider.PaymentVerified = true, true
	blocked := toolgatetest.Priced(toolgatetest.EchoTool(), "0.1000")
	blocked.Slug, blocked.Name = "blocked", "Echo blocked"
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
	gw := toolgatetest.New(t, &toolgatetest.Options{Tools: tools, Config: o.config, Store: o.store})
	keys := httpapi.NewKeyStore()
	require.NoError(t, keys.AddKey("alice", aliceKey))
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
	return e.clientAt(e.front.URL, aliceKey, opts)
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
func (e *env) quote(tool string) *toolgate.QuoteResult {
	e.t.Helper()
	return e.gw.MustQuote(e.t, "alice", tool)
}

// approved is a call of tool under q with input {"v": v}, approving the
// quoted digest.
func approved(q *toolgate.QuoteResult, v string) toolgate.CallRequest {
	input, _ := json.Marshal(map[string]string{"v": v})
	req := toolgate.CallRequest{Tool: q.Tool.Slug, QuoteID: q.Quote.ID, Input: input}
	if q.Quote.ManifestDigest != nil {
		req.ApprovalDigest = *q.Quote.ManifestDigest
	}
	return req
}

// startInFlight starts req in process, as alice, and returns once the
// provider holds it. finish lets the provider answer and returns the
// call's outcome; it may be called more than once.
func (e *env) startInFlight(req toolgate.CallRequest) (finish func() (*toolgate.CallResult, error)) {
	entered, release := make(chan struct{}), make(chan struct{})
	provider := e.gw.Upstream.Handler()
	var held sync.Once
	e.gw.Upstream.HandleFunc(func(w http.ResponseWriter, r *http.Request) {
		held.Do(func() { close(entered); <-release })
		provider.ServeHTTP(w, r)
	})
	type outcome struct {
		res *toolgate.CallResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := e.gw.For("alice").Call(context.Background(), req)
		done <- outcome{res, err}
	}()
	<-entered
	return sync.OnceValues(func() (*toolgate.CallResult, error) {
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
