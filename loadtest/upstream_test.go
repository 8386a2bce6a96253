package loadtest

import (
	"bytes"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/upstream"
)

// fault is what the upstream does with one request.
type fault int

const (
	faultNone        fault = iota // the provider's recorded answer
	faultUnavailable              // 503
	faultHang                     // no answer until past the gateway's deadline
	faultGarbage                  // 200 with a body no tool can read
	numFaults
)

func (f fault) String() string {
	return [...]string{"ok", "503", "hang", "garbage"}[f]
}

// Shares of faults, in percent.
const (
	unavailablePercent = 10
	hangPercent        = 5
	garbagePercent     = 5
)

// hangFor is how long a hung request waits before answering anyway: past
// the gateway's upstream deadline, which gives up first and closes the
// connection.
const hangFor = upstream.DefaultTimeout + 5*time.Second

// maxUpstreamBody bounds what the upstream reads of a request to decide.
const maxUpstreamBody = 64 << 10

// garbage is what faultGarbage answers, with status 200: truncated JSON,
// bytes that are not UTF-8, an HTML error page, JSON of another shape.
var garbage = []struct {
	contentType string
	body        string
}{
	{"application/json", `{"type":"FeatureCollection","features":[{"id":`},
	{"application/json", "\xff\xfe\x00\x01garbage\x80"},
	{"text/html", "<html><body><h1>502 Bad Gateway</h1></body></html>"},
	{"application/json", `{"unexpected":[1,2,3],"datum":null}`},
}

// faultyUpstream stands in for a provider: it serves next, but fails a share
// of requests. Which ones is decided by the seed and the request alone (its
// method, URL, body and how many times that very request was seen before),
// so the same caller sequence meets the same faults on every run.
type faultyUpstream struct {
	next http.Handler
	seed uint64
	srv  *httptest.Server

	// calm, once set, serves every request as next does: the load is over.
	calm atomic.Bool
	// release answers the requests still hanging (503) once closed.
	release     chan struct{}
	releaseOnce sync.Once

	mu   sync.Mutex
	seen map[uint64]uint64 // request digest -> times seen

	counts [numFaults]atomic.Int64
}

// newFaultyUpstream serves next on 127.0.0.1 with faults. The server is
// closed when the test ends, after any hang is released.
func newFaultyUpstream(t *testing.T, next http.Handler, seed uint64) *faultyUpstream {
	f := &faultyUpstream{next: next, seed: seed, release: make(chan struct{}), seen: map[uint64]uint64{}}
	f.srv = httptest.NewServer(f) // httptest listens on 127.0.0.1
	t.Cleanup(func() {
		f.quiet()
		f.srv.Close()
	})
	return f
}

// URL is the origin to point tools at.
func (f *faultyUpstream) URL() string { return f.srv.URL }

// quiet ends the faults: hanging requests are answered 503 now, and every
// later request is served normally.
func (f *faultyUpstream) quiet() {
	f.calm.Store(true)
	f.releaseOnce.Do(func() { close(f.release) })
}

func (f *faultyUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxUpstreamBody))
	if err != nil {
		http.Error(w, "cannot read the request", http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	if f.calm.Load() {
		f.counts[faultNone].Add(1)
		f.next.ServeHTTP(w, r)
		return
	}
	kind, rng := f.decide(r, body)
	f.counts[kind].Add(1)
	switch kind {
	case faultUnavailable:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, `{"error":"temporarily unavailable"}`)
	case faultHang:
		timer := time.NewTimer(hangFor)
		defer timer.Stop()
		select {
		case <-r.Context().Done(): // the gateway gave up: what the hang is for
		case <-f.release:
			http.Error(w, "the load is over", http.StatusServiceUnavailable)
		case <-timer.C:
			f.next.ServeHTTP(w, r) // too late for anyone to read
		}
	case faultGarbage:
		g := garbage[rng.IntN(len(garbage))]
		w.Header().Set("Content-Type", g.contentType)
		io.WriteString(w, g.body)
	default:
		f.next.ServeHTTP(w, r)
	}
}

// decide picks the fault for a request, and returns the generator it used,
// for any further choice.
func (f *faultyUpstream) decide(r *http.Request, body []byte) (fault, *rand.Rand) {
	h := fnv.New64a()
	io.WriteString(h, r.Method)
	io.WriteString(h, " ")
	io.WriteString(h, r.URL.RequestURI())
	h.Write([]byte{0})
	h.Write(body)
	digest := h.Sum64()
	f.mu.Lock()
	n := f.seen[digest]
	f.seen[digest] = n + 1
	f.mu.Unlock()
	rng := rand.New(rand.NewPCG(f.seed, digest^(n*0x9e3779b97f4a7c15)))
	switch p := rng.IntN(100); {
	case p < unavailablePercent:
		return faultUnavailable, rng
	case p < unavailablePercent+hangPercent:
		return faultHang, rng
	case p < unavailablePercent+hangPercent+garbagePercent:
		return faultGarbage, rng
	}
	return faultNone, rng
}

// summary counts the requests by fault.
func (f *faultyUpstream) summary() map[string]int64 {
	out := make(map[string]int64, numFaults)
	for k := fault(0); k < numFaults; k++ {
		out[k.String()] = f.counts[k].Load()
	}
	return out
}
