// Package webhook tells people of approval requests and of calls whose
// outcome is unknown: a Sender is a toolgate.ApprovalNotifier that POSTs
// each new request, each decision and each ambiguous execution to one
// URL, signed as the Standard Webhooks specification says (webhook-id,
// webhook-timestamp, webhook-signature), and retries failed deliveries
// with backoff in the background. Notifying never waits
// on the network: a slow or failing receiver never delays or fails a
// request of the gateway.
//
// The body is {"type": "approval_request.created" | "approval_request.decided",
// "timestamp": <when it happened>, "data": <the request, as the API shows it>},
// or for a call whose outcome is unknown {"type": "execution.ambiguous",
// "timestamp", "data": <the execution, as the audit trail lists it>}, or for
// a budget window whose charged use reached an alert fraction
// {"type": "budget.threshold", "timestamp", "data": <the crossing, a
// toolgatetype.BudgetThreshold>}. A budget.threshold event's webhook-id is
// the event's own stable id ("budget.threshold:<budget>:<window>:<fraction>:
// <period start>"), so a receiver can tell a crossing it already handled;
// every other event gets a random "msg_..." id.
package webhook

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/toolgate/toolgate/internal/weburl"
	"github.com/toolgate/toolgate/toolgatetype"
)

// Defaults of Config fields left zero.
const (
	DefaultMaxAttempts = 8
	DefaultQueueSize   = 1000
	DefaultTimeout     = 15 * time.Second
	maxBackoff         = 5 * time.Minute
)

// Config holds a Sender's optional settings. A nil *Config, and every zero
// field, means the default.
type Config struct {
	// Client sends the webhooks; nil means one with a 15 s timeout that
	// follows no redirects (a redirect is a failed delivery, as the
	// specification advises).
	Client *http.Client
	// Backoff is how long to wait before attempt n+1 after attempt n
	// failed; nil means 1 s doubling with each attempt, jittered, at most
	// 5 minutes. A receiver's Retry-After, when longer, is honoured up to
	// the same cap.
	Backoff func(n int) time.Duration
	// MaxAttempts bounds the attempts per event (default 8).
	MaxAttempts int
	// QueueSize bounds the events waiting to be sent (default 1000). An
	// event that finds the queue full is dropped, with a warning, rather
	// than holding up the request that caused it.
	QueueSize int
	// ApproveURL gives the approveUrl of a request in the data, where a
	// person decides it; nil leaves approveUrl out. It should be built from
	// the operator's configuration, never from a caller's request.
	ApproveURL func(id string) string
	// Logger receives delivery failures; nil discards them. The secret is
	// never logged, nor any part of the URL but its host.
	Logger *slog.Logger
}

// Sender delivers approval events to one URL. Safe for concurrent use.
type Sender struct {
	url     string
	host    string
	key     []byte
	cfg     Config
	queue   chan delivery
	stop    chan struct{}
	done    chan struct{}
	closing sync.Once
	// cancel ends the delivery in progress and every wait for a retry.
	cancel context.CancelFunc
}

// delivery is one event to send: its id is the same on every attempt, so
// that a receiver can tell a retry from a new event.
type delivery struct {
	id      string
	payload []byte
}

// New returns a Sender to target (an http or https URL), signing with
// secret ("whsec_..."), and starts its delivery goroutine; Close stops it.
// Errors never quote the secret.
func New(target, secret string, cfg *Config) (*Sender, error) {
	u, err := weburl.Check(target, weburl.Allow{PortOnlyHost: true, User: true, Path: true, Query: true, Fragment: true})
	if err != nil {
		return nil, errors.New("webhook: the URL must be an http or https URL")
	}
	key, err := ParseSecret(secret)
	if err != nil {
		return nil, err
	}
	c := Config{}
	if cfg != nil {
		c = *cfg
	}
	if c.Client == nil {
		c.Client = &http.Client{
			Timeout:       DefaultTimeout,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	if c.Backoff == nil {
		c.Backoff = defaultBackoff
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.QueueSize <= 0 {
		c.QueueSize = DefaultQueueSize
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Sender{
		url:    target,
		host:   u.Host,
		key:    key,
		cfg:    c,
		queue:  make(chan delivery, c.QueueSize),
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
		cancel: cancel,
	}
	go s.run(ctx)
	return s, nil
}

// event is the body of a webhook. Data is the approval request, for an
// execution event the execution as the audit trail lists it, and for a
// budget event the crossing.
type event struct {
	Type      toolgatetype.ApprovalEventType `json:"type"`
	Timestamp time.Time                      `json:"timestamp"`
	Data      any                            `json:"data"`
}

// NotifyApproval queues the event for delivery and returns at once.
func (s *Sender) NotifyApproval(ctx context.Context, ev toolgatetype.ApprovalEvent) {
	var data any
	id := ev.Request.ID
	msgID := "msg_" + randomHex(16)
	switch {
	case ev.Threshold != nil:
		data, id = ev.Threshold, ev.ID
		if ev.ID != "" {
			// The crossing's own id: the same from whichever gateway saw
			// it, so that a receiver can drop a second report of it.
			msgID = ev.ID
		}
	case ev.Execution != nil:
		data, id = ev.Execution, ev.Execution.ID
	default:
		req := ev.Request
		req.ApproveURL = ""
		if s.cfg.ApproveURL != nil {
			req.ApproveURL = s.cfg.ApproveURL(req.ID)
		}
		data = req
	}
	payload, err := json.Marshal(event{Type: ev.Type, Timestamp: ev.Timestamp.UTC(), Data: data})
	if err != nil {
		s.cfg.Logger.ErrorContext(ctx, "webhook: cannot encode an approval event", "error", err)
		return
	}
	d := delivery{id: msgID, payload: payload}
	select {
	case <-s.stop:
		s.cfg.Logger.WarnContext(ctx, "webhook: closed; approval event not sent", "type", ev.Type, "id", id)
	case s.queue <- d:
	default:
		s.cfg.Logger.WarnContext(ctx, "webhook: queue full; approval event dropped", "type", ev.Type, "id", id, "host", s.host)
	}
}

// Close stops accepting events, delivers those queued until ctx is done,
// and returns once the delivery goroutine has ended. Events still queued
// then are dropped.
func (s *Sender) Close(ctx context.Context) {
	s.closing.Do(func() { close(s.stop) })
	select {
	case <-s.done:
	case <-ctx.Done():
		s.cancel()
		<-s.done
	}
	s.cancel()
}

// run delivers events in order until Close.
func (s *Sender) run(ctx context.Context) {
	defer close(s.done)
	for {
		select {
		case d := <-s.queue:
			s.deliver(ctx, d)
		case <-s.stop:
			// Drain what was queued before Close.
			for {
				select {
				case d := <-s.queue:
					if ctx.Err() == nil {
						s.deliver(ctx, d)
					}
				default:
					return
				}
			}
		}
	}
}

// deliver sends one event, retrying with backoff until a 2xx, a 410 Gone
// (the receiver wants no more), MaxAttempts, or the end of ctx.
func (s *Sender) deliver(ctx context.Context, d delivery) {
	for attempt := 1; ; attempt++ {
		status, retryAfter, err := s.attempt(ctx, d)
		switch {
		case err == nil && status >= 200 && status < 300:
			return
		case status == http.StatusGone:
			s.cfg.Logger.Warn("webhook: the receiver answered 410 Gone; event not retried", "id", d.id, "host", s.host)
			return
		case attempt >= s.cfg.MaxAttempts:
			s.cfg.Logger.Warn("webhook: delivery failed; giving up", "id", d.id, "host", s.host, "attempts", attempt, "status", status, "error", errText(err))
			return
		}
		wait := s.cfg.Backoff(attempt)
		if retryAfter > wait {
			wait = min(retryAfter, maxBackoff)
		}
		s.cfg.Logger.Info("webhook: delivery failed; will retry", "id", d.id, "host", s.host, "attempt", attempt, "status", status, "error", errText(err), "retryIn", wait.String())
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// attempt POSTs the event once, signed with this attempt's timestamp.
func (s *Sender) attempt(ctx context.Context, d delivery) (status int, retryAfter time.Duration, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(d.payload))
	if err != nil {
		return 0, 0, err
	}
	now := time.Now()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "toolgate-webhook")
	req.Header.Set("webhook-id", d.id)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
	req.Header.Set("webhook-signature", Sign(s.key, d.id, now, d.payload))
	resp, err := s.cfg.Client.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && secs > 0 {
		retryAfter = time.Duration(secs) * time.Second
	}
	return resp.StatusCode, retryAfter, nil
}

// defaultBackoff waits 1 s, 2 s, 4 s... with up to a quarter of jitter, at
// most maxBackoff.
func defaultBackoff(n int) time.Duration {
	wait := maxBackoff
	if n < 20 {
		wait = min(time.Second<<(n-1), maxBackoff)
	}
	jitter, err := rand.Int(rand.Reader, big.NewInt(int64(wait/4)+1))
	if err != nil {
		return wait
	}
	return wait - time.Duration(jitter.Int64())
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// errText is an error for a log line; the URL in a client error names the
// receiver, which is the host already logged.
func errText(err error) string {
	if err == nil {
		return ""
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Sprintf("%s: %v", ue.Op, ue.Err)
	}
	return err.Error()
}
