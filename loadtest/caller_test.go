package loadtest

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/shopspring/decimal"

	"github.com/toolgate/toolgate/upstream"
)

// Bounds of the callers' loops, beyond the run's duration.
const (
	maxPairsPerCaller = 100_000
	maxCallAttempts   = 40
	// callBudget bounds the retries of one call: a hang, an impatient
	// caller's retries through the gateway's deadline, and a margin.
	callBudget    = upstream.DefaultTimeout + 35*time.Second
	retryWaitMin  = 50 * time.Millisecond
	retryWaitMax  = time.Second
	replayPercent = 10 // calls answered 200 that are sent again to check the replay
	reusePercent  = 2  // calls answered 200 whose key is reused for another body
	maxProblems   = 30 // problems kept verbatim; the rest are counted
)

// call is one logical call: one Idempotency-Key and one body, sent until a
// definitive answer.
type call struct {
	key  string
	p    *principal
	slug string
	body []byte

	first    time.Time // when first sent
	attempts int
	resolved bool   // the last attempt got a definitive answer
	last     string // the last attempt's outcome, for messages

	// From the first 200.
	execID     string
	sum        [sha256.Size]byte
	size       int
	status     string // completed | failed
	totalUSD   decimal.Decimal
	answeredAt time.Time

	// refusal is the error code of the last definitive non-200 answer.
	refusal string
}

// stats counts what a phase of a run saw. Every method is safe for
// concurrent use.
type stats struct {
	mu        sync.Mutex
	requests  map[string]map[int]int // kind -> status (0: transport error) -> count
	codes     map[string]int         // error codes of non-200 answers to calls
	execCodes map[string]int         // error codes of failed executions
	latency   map[string][]time.Duration
	replayed  int            // 200s with Idempotent-Replayed on the calls' own retries
	transport map[string]int // transport errors by class
	inFlight  map[string]int // how requests in flight at the signal ended
	problems  []string
	nProblems int
}

func newStats() *stats {
	return &stats{
		requests:  map[string]map[int]int{},
		codes:     map[string]int{},
		execCodes: map[string]int{},
		latency:   map[string][]time.Duration{},
		transport: map[string]int{},
		inFlight:  map[string]int{},
	}
}

// problem records a broken expectation; the test fails on any.
func (s *stats) problem(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nProblems++
	if len(s.problems) < maxProblems {
		s.problems = append(s.problems, fmt.Sprintf(format, args...))
	}
}

func (s *stats) count(kind string, rep reply) {
	status := rep.status
	if rep.err != nil {
		status = 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.requests[kind] == nil {
		s.requests[kind] = map[int]int{}
	}
	s.requests[kind][status]++
	if rep.err == nil {
		s.latency[kind] = append(s.latency[kind], rep.took)
	} else {
		s.transport[errClass(rep.err)]++
	}
	if status >= 300 && kind == "call" {
		s.codes[rep.code()]++
	}
}

// total counts requests of a kind (all kinds when kind is "") with a status
// accepted by match.
func (s *stats) total(kind string, match func(status int) bool) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for k, byStatus := range s.requests {
		if kind != "" && k != kind {
			continue
		}
		for status, c := range byStatus {
			if match(status) {
				n += c
			}
		}
	}
	return n
}

// percentile returns the p-th percentile (0 < p <= 100) of a kind's latency.
func (s *stats) percentile(kind string, p float64) time.Duration {
	s.mu.Lock()
	d := append([]time.Duration(nil), s.latency[kind]...)
	s.mu.Unlock()
	if len(d) == 0 {
		return 0
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	i := int(float64(len(d))*p/100+0.5) - 1
	return d[max(0, min(i, len(d)-1))]
}

// load drives one server with the rig's callers.
type load struct {
	r     *rig
	base  string
	stats *stats
	// stopped ends the callers: no new pair, no retry.
	stopped atomic.Bool
	// signalAt is when SIGTERM was sent (UnixNano), 0 before.
	signalAt atomic.Int64
}

func (r *rig) newLoad(srv *server) *load {
	return &load{r: r, base: srv.base, stats: newStats()}
}

// send makes one request and counts it under kind.
func (l *load) send(kind string, client *http.Client, p *principal, method, path string, body []byte, idemKey string) reply {
	rep := send(client, l.base, p, method, path, body, idemKey)
	l.stats.count(kind, rep)
	if sig := l.signalAt.Load(); sig != 0 && rep.start.UnixNano() < sig && rep.start.Add(rep.took).UnixNano() > sig {
		outcome := fmt.Sprintf("%s %d", kind, rep.status)
		if rep.err != nil {
			outcome = kind + " " + errClass(rep.err)
		}
		l.stats.mu.Lock()
		l.stats.inFlight[outcome]++
		l.stats.mu.Unlock()
	}
	if rep.err == nil && rep.status >= 500 {
		l.stats.problem("%s %s answered %d: %s", method, path, rep.status, rep.body)
	}
	return rep
}

// caller runs quote-and-call pairs as caller i until end, or until the load
// is stopped, and returns its calls.
func (l *load) caller(i int, end time.Time) []*call {
	rng := rand.New(rand.NewPCG(l.r.set.seed, uint64(i)+1<<32))
	p := &l.r.principals[i%len(l.r.principals)]
	client := l.r.patient
	if i%impatientEvery == impatientEvery-1 {
		client = l.r.impatient
	}
	var calls []*call
	for seq := 0; seq < maxPairsPerCaller && time.Now().Before(end) && !l.stopped.Load(); seq++ {
		slug, input := pickCall(rng, i, seq)
		quoteID, digest, ok := l.quote(client, p, slug)
		if !ok {
			time.Sleep(retryWaitMin) // not a hot loop on a refusing server
			continue
		}
		if l.stopped.Load() {
			break // the quote stays open, unused
		}
		body, err := json.Marshal(map[string]any{
			"quoteId":  quoteID,
			"input":    input,
			"approval": map[string]any{"manifestDigest": digest},
		})
		if err != nil {
			l.stats.problem("marshal a call body: %v", err)
			return calls
		}
		c := &call{key: fmt.Sprintf("load-%s-c%d-s%d", l.r.runID, i, seq), p: p, slug: slug, body: body}
		calls = append(calls, c)
		l.callUntilAnswered(c, client, rng, time.Now().Add(callBudget), l.stopped.Load)
		if c.execID == "" || l.stopped.Load() {
			continue
		}
		if rng.IntN(100) < replayPercent {
			l.checkReplay(c)
		}
		if rng.IntN(100) < reusePercent {
			l.checkReuse(c)
		}
	}
	return calls
}

// quote quotes slug as p, and returns the quote's id and manifest digest.
func (l *load) quote(client *http.Client, p *principal, slug string) (id, digest string, ok bool) {
	rep := l.send("quote", client, p, http.MethodPost, "/v1/tools/"+slug+"/quote", nil, "")
	if rep.err != nil || rep.status >= 500 {
		return "", "", false
	}
	if rep.status != http.StatusCreated {
		l.stats.problem("quote %s as %s: %d %s", slug, p.id, rep.status, rep.body)
		return "", "", false
	}
	var q struct {
		Quote struct {
			ID             string `json:"id"`
			ManifestDigest string `json:"manifestDigest"`
		} `json:"quote"`
	}
	if err := json.Unmarshal(rep.body, &q); err != nil || q.Quote.ID == "" || q.Quote.ManifestDigest == "" {
		l.stats.problem("quote %s: unreadable answer %s", slug, rep.body)
		return "", "", false
	}
	return q.Quote.ID, q.Quote.ManifestDigest, true
}

// callUntilAnswered sends c until a definitive answer, retrying with the
// same key and body after a transport error or 409 idempotency_key_in_use,
// as a client should, until deadline or until giveUp says so.
func (l *load) callUntilAnswered(c *call, client *http.Client, rng *rand.Rand, deadline time.Time, giveUp func() bool) {
	for attempt := 0; attempt < maxCallAttempts; attempt++ {
		if attempt > 0 {
			if giveUp() || time.Now().After(deadline) {
				return
			}
			time.Sleep(backoff(rng, attempt))
		}
		if c.first.IsZero() {
			c.first = time.Now()
		}
		rep := l.send("call", client, c.p, http.MethodPost, "/v1/tools/"+c.slug+"/call", c.body, c.key)
		c.attempts++
		if l.record(c, rep) {
			return
		}
	}
}

// gist shortens an error message to its first words, without the numbers
// and times that would make every message different.
func gist(msg string) string {
	words := strings.Fields(msg)
	if len(words) > 5 {
		words = words[:5]
	}
	return strings.Join(words, " ")
}

// errClass names the kind of a transport error.
func errClass(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()):
		return "client timeout"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET):
		return "connection closed"
	}
	return "other transport error"
}

// backoff is exponential from retryWaitMin to retryWaitMax, jittered.
func backoff(rng *rand.Rand, attempt int) time.Duration {
	d := retryWaitMin << min(attempt-1, 10)
	if d > retryWaitMax {
		d = retryWaitMax
	}
	return d/2 + time.Duration(rng.Int64N(int64(d/2)+1))
}

// record notes an answer to c and reports whether it is definitive.
func (l *load) record(c *call, rep reply) bool {
	switch {
	case rep.err != nil:
		c.resolved, c.last = false, "transport error: "+rep.err.Error()
		return false
	case rep.status == http.StatusConflict && rep.code() == "idempotency_key_in_use":
		c.resolved, c.last = false, "409 idempotency_key_in_use"
		return false
	}
	c.resolved, c.last = true, fmt.Sprintf("%d %s", rep.status, rep.code())
	switch {
	case rep.status == http.StatusOK:
		c.refusal = ""
		l.answer(c, rep)
	case rep.status >= 500: // counted as a problem by send
	case rep.status == http.StatusForbidden && rep.code() == "spend_limit_exceeded",
		rep.status == http.StatusTooManyRequests && rep.code() == "rate_limited":
		c.refusal = rep.code()
	default:
		l.stats.problem("call %s (%s as %s): unexpected %d %s", c.key, c.slug, c.p.id, rep.status, rep.body)
	}
	return true
}

// execution is the part of an execution body the checks read.
type execution struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Cost   struct {
		TotalUSD string `json:"totalUsd"`
	} `json:"cost"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// answer records a 200: the first fixes the key's execution, and every
// later one must be the same execution, byte for byte.
func (l *load) answer(c *call, rep reply) {
	var e execution
	if err := json.Unmarshal(rep.body, &e); err != nil || e.ID == "" {
		l.stats.problem("call %s: unreadable 200 %s", c.key, rep.body)
		return
	}
	if h := rep.header.Get("Toolgate-Execution-Id"); h != e.ID {
		l.stats.problem("call %s: Toolgate-Execution-Id %q but the body's id is %q", c.key, h, e.ID)
	}
	replayed := rep.header.Get("Idempotent-Replayed") == "true"
	if replayed {
		l.stats.mu.Lock()
		l.stats.replayed++
		l.stats.mu.Unlock()
	}
	sum := sha256.Sum256(rep.body)
	if c.execID != "" {
		if e.ID != c.execID {
			l.stats.problem("key %s ran twice: executions %s and %s", c.key, c.execID, e.ID)
		} else if sum != c.sum {
			l.stats.problem("key %s: execution %s answered with different bytes", c.key, e.ID)
		}
		return
	}
	total, err := decimal.NewFromString(e.Cost.TotalUSD)
	if err != nil || (e.Status != "completed" && e.Status != "failed") {
		l.stats.problem("call %s: execution with status %q, totalUsd %q", c.key, e.Status, e.Cost.TotalUSD)
		return
	}
	c.execID, c.sum, c.size, c.status, c.totalUSD, c.answeredAt = e.ID, sum, len(rep.body), e.Status, total, time.Now()
	if e.Status == "failed" {
		code := "(none)"
		if e.Error != nil {
			code = e.Error.Code + " (" + gist(e.Error.Message) + ")"
		}
		l.stats.mu.Lock()
		l.stats.execCodes[code]++
		l.stats.mu.Unlock()
	}
}

// checkReplay sends an answered call again: the same execution must come
// back, marked as replayed, byte for byte.
func (l *load) checkReplay(c *call) {
	rep := l.send("replay", l.r.patient, c.p, http.MethodPost, "/v1/tools/"+c.slug+"/call", c.body, c.key)
	switch {
	case rep.err != nil || rep.status >= 500:
		return // counted; a transport error proves nothing either way
	case rep.status != http.StatusOK:
		l.stats.problem("replay of %s: %d %s", c.key, rep.status, rep.body)
	case rep.header.Get("Idempotent-Replayed") != "true":
		l.stats.problem("replay of %s: no Idempotent-Replayed: true (execution %s)", c.key, rep.header.Get("Toolgate-Execution-Id"))
	case rep.header.Get("Toolgate-Execution-Id") != c.execID:
		l.stats.problem("replay of %s: execution %s, first answered %s", c.key, rep.header.Get("Toolgate-Execution-Id"), c.execID)
	case sha256.Sum256(rep.body) != c.sum:
		l.stats.problem("replay of %s: different bytes", c.key)
	}
}

// checkReuse sends another body under an answered call's key: 422.
func (l *load) checkReuse(c *call) {
	var body map[string]any
	if err := json.Unmarshal(c.body, &body); err != nil {
		l.stats.problem("reuse of %s: %v", c.key, err)
		return
	}
	body["input"] = map[string]any{"another": "request"}
	b, _ := json.Marshal(body)
	rep := l.send("reuse", l.r.patient, c.p, http.MethodPost, "/v1/tools/"+c.slug+"/call", b, c.key)
	if rep.err == nil && rep.status < 500 && (rep.status != http.StatusUnprocessableEntity || rep.code() != "idempotency_key_reused") {
		l.stats.problem("reuse of %s for another body: %d %s", c.key, rep.status, rep.body)
	}
}

// pickCall chooses a tool and an input. goal-data, the paid tool, gets
// about 40% of the calls; inputs vary with the caller and the sequence, so
// that the upstream's fault decisions differ between calls.
func pickCall(rng *rand.Rand, caller, seq int) (string, map[string]any) {
	day := func(offset int) string {
		return time.Date(2024, time.January, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, offset).Format(time.DateOnly)
	}
	n := caller*7919 + seq
	switch k := rng.IntN(10); {
	case k < 4:
		return "goal-data", map[string]any{"goal": fmt.Sprintf("load caller %d call %d", caller, seq), "step": 1 + rng.IntN(5)}
	case k < 6:
		d := n % 300
		return "earthquake-search", map[string]any{"starttime": day(d), "endtime": day(d + 5)}
	case k < 8:
		return "exchange-rates", map[string]any{"base": "USD", "quotes": "EUR,GBP", "date": day(n % 600)}
	default:
		return "public-holidays", map[string]any{"countryCode": "PT", "year": 1950 + n%200}
	}
}
