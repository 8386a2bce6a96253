package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime/pprof"
	"strconv"
	"sync"
	"time"

	"github.com/toolgate/toolgate/internal/testproc"
)

// op is one request (or one quote+call pair) of client number c; i counts
// that client's operations from 0.
type op func(ctx context.Context, c, i int) error

// phase is one kind of load and what it measured, summed over its slices.
type phase struct {
	name     string
	op       op
	clients  int
	next     []int // each client's next operation number, kept across slices
	lat      histogram
	ops      int
	elapsed  time.Duration
	cpu      time.Duration // the process's CPU time while measuring
	errors   int
	firstErr error
}

func newPhase(name string, o op, clients int) *phase {
	return &phase{name: name, op: o, clients: clients, next: make([]int, clients)}
}

// rate is operations per second over the measured time.
func (p *phase) rate() float64 { return float64(p.ops) / p.elapsed.Seconds() }

// cpuPerOp is the process's CPU time per operation: clients, gateway and
// stub together. On a machine shared with other work it is steadier than
// the rate, which depends on how much CPU the process was given.
func (p *phase) cpuPerOp() time.Duration {
	return p.cpu / time.Duration(max(p.ops, 1))
}

// percentile is the latency below which the fraction q of operations fell.
func (p *phase) percentile(q float64) time.Duration { return p.lat.percentile(q) }

// runSlice runs the phase's clients, each doing its operation back to back,
// for d. With measure, the operations that complete within d count, and the
// time and the process's CPU time are noted. No operation is cut short: at
// the end the clients stop starting new ones and the ones under way finish
// uncounted, so that no connection is dropped.
func runSlice(ctx context.Context, p *phase, d time.Duration, measure bool) {
	var (
		wg sync.WaitGroup
		mu sync.Mutex
	)
	cpu0 := testproc.ProcessCPU()
	start := time.Now()
	deadline := start.Add(d)
	for c := 0; c < p.clients; c++ {
		wg.Add(1)
		// The client's goroutines, and the connections they dial, carry
		// the profiler label phase=name.
		go pprof.Do(ctx, pprof.Labels("phase", p.name), func(ctx context.Context) {
			defer wg.Done()
			var (
				mine     histogram
				errs     int
				firstErr error
			)
			for ctx.Err() == nil && time.Now().Before(deadline) {
				t0 := time.Now()
				err := p.op(ctx, c, p.next[c])
				p.next[c]++
				t1 := time.Now()
				switch {
				case ctx.Err() != nil:
				case err != nil:
					errs++
					if firstErr == nil {
						firstErr = err
					}
				case measure && !t1.After(deadline):
					mine.add(t1.Sub(t0))
				}
			}
			mu.Lock()
			p.lat.merge(&mine)
			p.ops += int(mine.n)
			p.errors += errs
			if p.firstErr == nil {
				p.firstErr = firstErr
			}
			mu.Unlock()
		})
	}
	sleep(ctx, d)
	end := time.Now()
	cpu := testproc.ProcessCPU() - cpu0
	wg.Wait()
	if !measure {
		return
	}
	p.elapsed += end.Sub(start)
	p.cpu += cpu
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// newClient is an HTTP client that keeps one connection per client open.
func newClient(clients int) *http.Client {
	return &http.Client{Transport: &http.Transport{
		MaxIdleConns:        clients,
		MaxIdleConnsPerHost: clients,
		IdleConnTimeout:     time.Minute,
		DisableCompression:  true,
	}}
}

// buffers holds one reusable response buffer per client, so reading a body
// costs the clients no allocation in either phase.
type buffers []bytes.Buffer

func (b buffers) read(c int, body io.Reader) ([]byte, error) {
	buf := &b[c]
	buf.Reset()
	_, err := buf.ReadFrom(body)
	return buf.Bytes(), err
}

// stubQuery is what earthquake-search sends the provider for benchInput.
const stubQuery = "/fdsnws/event/1/query?format=geojson&limit=10&minmagnitude=4&orderby=time&starttime=2024-09-25"

// directLoad GETs the stub's body, as the gateway's upstream request does.
func directLoad(stubURL string, clients int) op {
	client := newClient(clients)
	bufs := make(buffers, clients)
	url := stubURL + stubQuery
	return func(ctx context.Context, c, _ int) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, err := bufs.read(c, resp.Body)
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK || len(body) == 0 {
			return fmt.Errorf("direct GET: HTTP %d", resp.StatusCode)
		}
		return nil
	}
}

// pairLoad quotes earthquake-search and calls it under the quote with the
// digest approved and a fresh Idempotency-Key, each client as its own
// principal.
func pairLoad(gw *gatewayServer) op {
	client := newClient(len(gw.keys))
	bufs := make(buffers, len(gw.keys))
	quoteURL := gw.url + "/v1/tools/earthquake-search/quote"
	callURL := gw.url + "/v1/tools/earthquake-search/call"
	return func(ctx context.Context, c, i int) error {
		auth := "Bearer " + gw.keys[c]
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, quoteURL, nil)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", auth)
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		body, err := bufs.read(c, resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusCreated {
			return fmt.Errorf("quote: HTTP %d: %.200s", resp.StatusCode, body)
		}
		var q struct {
			Quote struct {
				ID             string  `json:"id"`
				ManifestDigest *string `json:"manifestDigest"`
			} `json:"quote"`
		}
		if err := json.Unmarshal(body, &q); err != nil || q.Quote.ManifestDigest == nil {
			return fmt.Errorf("quote: unreadable answer %.200s", body)
		}

		call := make([]byte, 0, 256)
		call = append(call, `{"quoteId":"`...)
		call = append(call, q.Quote.ID...)
		call = append(call, `","input":{"starttime":"2024-09-25"},"approval":{"manifestDigest":"`...)
		call = append(call, *q.Quote.ManifestDigest...)
		call = append(call, `"}}`...)
		req, err = http.NewRequestWithContext(ctx, http.MethodPost, callURL, bytes.NewReader(call))
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", auth)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "bench-"+strconv.Itoa(i))
		resp, err = client.Do(req)
		if err != nil {
			return err
		}
		body, err = bufs.read(c, resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(`"status":"completed"`)) {
			return fmt.Errorf("call: HTTP %d: %.300s", resp.StatusCode, body)
		}
		return nil
	}
}
