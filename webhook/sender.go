// Package webhook sends the gateway's events (section 28) as Standard
// Webhooks: a Sender is an outbox.Sender that POSTs each event to one URL,
// signed as the specification says (webhook-id, webhook-timestamp,
// webhook-signature). It sends; the outbox decides when: an
// outbox.Deliverer claims the store's events, retries failed deliveries
// with backoff for a day, and keeps the ones that fail for good.
//
// The body is {"type", "timestamp": <when it happened>, "data"}: for
// "approval_request.created" and "approval_request.decided" the request as
// the API shows it (with its approveUrl, from Config.ApproveURL); for
// "execution.ambiguous" the execution as GET /v1/executions/{id} shows it;
// for "budget.threshold" the crossing (a toolgatetype.BudgetThreshold); for
// "budget.limit_reached" the refusal's window (a
// toolgatetype.BudgetLimitReached). Every event's webhook-id is its own
// stable id ("approval_request.created:<request id>", "execution.ambiguous:
// <execution id>", "budget.threshold:<budget>:<window>:<fraction>:<first
// day>", "budget.limit_reached:<budget>:<window>:<first day>"), the same on
// every attempt and from every instance, so a receiver deduplicates on it.
package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/toolgate/toolgate/internal/weburl"
	"github.com/toolgate/toolgate/outbox"
	"github.com/toolgate/toolgate/storage"
)

// DefaultTimeout bounds one delivery attempt.
const DefaultTimeout = 15 * time.Second

// Config holds a Sender's optional settings. A nil *Config, and every zero
// field, means the default.
type Config struct {
	// Client sends the webhooks; nil means one with a 15 s timeout that
	// follows no redirects (a redirect is a failed delivery, as the
	// specification advises).
	Client *http.Client
	// ApproveURL gives the approveUrl of a request in the data of an
	// approval_request event, where a person decides it; nil leaves
	// approveUrl out. It should be built from the operator's
	// configuration, never from a caller's request.
	ApproveURL func(id string) string
}

// Sender delivers events to one URL: an outbox.Sender, which an
// outbox.Deliverer (Config.Events of the gateway) sends the store's
// events with. Safe for concurrent use.
type Sender struct {
	url  string
	host string
	key  []byte
	cfg  Config
}

// New returns a Sender to target (an http or https URL), signing with
// secret ("whsec_..."). Errors never quote the secret.
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
	return &Sender{url: target, host: u.Host, key: key, cfg: c}, nil
}

// Host is the receiver's host, for log lines: never the rest of the URL,
// which may carry a credential.
func (s *Sender) Host() string { return s.host }

// Send POSTs one event, signed with this attempt's timestamp under the
// event's stable id. A 2xx is a delivery; 410 Gone fails it for good
// (outbox.Permanent); anything else is an error to retry, after the
// receiver's Retry-After when it gave one.
func (s *Sender) Send(ctx context.Context, e storage.Event) error {
	payload, err := s.payload(e)
	if err != nil {
		return outbox.Permanent(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(payload))
	if err != nil {
		return outbox.Permanent(err)
	}
	now := time.Now()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "toolgate-webhook")
	req.Header.Set("webhook-id", e.ID)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
	req.Header.Set("webhook-signature", Sign(s.key, e.ID, now, payload))
	resp, err := s.cfg.Client.Do(req)
	if err != nil {
		return errors.New(errText(err))
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return nil
	case resp.StatusCode == http.StatusGone:
		return outbox.Permanent(fmt.Errorf("%d %s: the receiver wants no more", resp.StatusCode, http.StatusText(resp.StatusCode)))
	}
	err = fmt.Errorf("%d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
	if secs, perr := strconv.Atoi(resp.Header.Get("Retry-After")); perr == nil && secs > 0 {
		return outbox.RetryAfter(err, time.Duration(secs)*time.Second)
	}
	return err
}

// payload is the body sent for e: as stored, but for an approval
// request's approveUrl, added from the operator's configuration.
func (s *Sender) payload(e storage.Event) ([]byte, error) {
	if s.cfg.ApproveURL == nil || !strings.HasPrefix(e.Type, "approval_request.") {
		return e.Payload, nil
	}
	var body map[string]json.RawMessage
	if err := json.Unmarshal(e.Payload, &body); err != nil {
		return nil, fmt.Errorf("webhook: event %s: %w", e.ID, err)
	}
	var data map[string]json.RawMessage
	if err := json.Unmarshal(body["data"], &data); err != nil {
		return nil, fmt.Errorf("webhook: event %s has no data object: %w", e.ID, err)
	}
	var id string
	if err := json.Unmarshal(data["id"], &id); err != nil || id == "" {
		return e.Payload, nil
	}
	url := s.cfg.ApproveURL(id)
	if url == "" {
		return e.Payload, nil
	}
	data["approveUrl"], _ = json.Marshal(url)
	body["data"], _ = json.Marshal(data)
	return json.Marshal(body)
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
