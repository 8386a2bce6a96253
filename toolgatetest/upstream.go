package toolgatetest

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"

	"github.com/toolgate/toolgate/tools/recorded"
)

// Upstream is a fake provider to give a gateway as its transport. It answers
// every request in process, never touching the network: by default as the
// real providers of the built-in tools would (tools/recorded) and as the
// echo tool's provider (see EchoTool), or with whatever handler the test sets.
// It counts the requests that reach it and keeps a copy of each. Safe for
// concurrent use.
type Upstream struct {
	mu       sync.Mutex
	handler  http.Handler
	calls    int
	requests []Request // the first keptRequests
}

// keptRequests bounds the copies an Upstream keeps, so that a benchmark
// can send it any number of requests; Calls still counts every one.
const keptRequests = 10_000

// Request is a copy of one request that reached an Upstream.
type Request struct {
	Method string
	URL    *url.URL
	Header http.Header
	Body   []byte
}

// NewUpstream returns an Upstream answering with the default providers.
func NewUpstream() *Upstream {
	return &Upstream{handler: defaultProviders()}
}

// defaultProviders answers the echo tool's host with the echo provider and
// everything else from the recorded providers.
func defaultProviders() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(echoHost+"/", EchoProvider)
	mux.Handle("/", recorded.Handler())
	return mux
}

// Handle makes h answer every request from now on.
func (u *Upstream) Handle(h http.Handler) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.handler = h
}

// Handler returns the handler answering now, for a test to wrap it (to
// hold requests, or to answer some paths itself and pass on the rest).
func (u *Upstream) Handler() http.Handler {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.handler
}

// HandleFunc makes f answer every request from now on.
func (u *Upstream) HandleFunc(f func(http.ResponseWriter, *http.Request)) {
	u.Handle(http.HandlerFunc(f))
}

// Reply returns a handler answering every request with status and a JSON
// body, for Handle.
func Reply(status int, jsonBody string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, jsonBody)
	})
}

// Calls is how many requests have reached the upstream.
func (u *Upstream) Calls() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.calls
}

// Requests returns a copy of each request that reached the upstream, in
// the order they arrived (the first 10,000 of them).
func (u *Upstream) Requests() []Request {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]Request(nil), u.requests...)
}

// RequireCalls fails the test unless exactly n requests reached the upstream.
func (u *Upstream) RequireCalls(t T, n int) {
	t.Helper()
	if got := u.Calls(); got != n {
		t.Fatalf("the upstream was reached %d times, want %d", got, n)
	}
}

// RoundTrip implements http.RoundTripper: it records req and answers it
// with the current handler, as a server would see it.
func (u *Upstream) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL == nil {
		return nil, errors.New("toolgatetest: request has no URL")
	}
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	var body []byte
	if req.Body != nil {
		var err error
		body, err = io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
	}
	copied := *req.URL
	u.mu.Lock()
	u.calls++
	if len(u.requests) < keptRequests {
		u.requests = append(u.requests, Request{Method: req.Method, URL: &copied, Header: req.Header.Clone(), Body: body})
	}
	h := u.handler
	u.mu.Unlock()

	in := req.Clone(req.Context())
	if in.Host == "" {
		in.Host = req.URL.Host
	}
	in.RequestURI = req.URL.RequestURI()
	in.Body = io.NopCloser(bytes.NewReader(body))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, in)
	resp := rec.Result()
	resp.Request = req
	resp.ContentLength = int64(rec.Body.Len())
	return resp, nil
}
