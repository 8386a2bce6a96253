package toolgate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/shopspring/decimal"
	"github.com/toolgate/toolgate/internal/budgets"
	"github.com/toolgate/toolgate/internal/executor"
	"github.com/toolgate/toolgate/internal/textcheck"
	"github.com/toolgate/toolgate/outbox"
	"github.com/toolgate/toolgate/receipt"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
	"github.com/toolgate/toolgate/upstream"
	"go.opentelemetry.io/otel/trace"
)

// Defaults for Config fields left zero.
const (
	DefaultQuoteTTL             = 5 * time.Minute
	DefaultApprovalTTL          = 30 * time.Minute
	DefaultIdempotencyLease     = 60 * time.Second
	DefaultIdempotencyRetention = 24 * time.Hour
	DefaultMaxOpenQuotes        = 1000
)

// Config holds a Gateway's optional dependencies and settings. A nil
// *Config, and every zero field, means the default.
type Config struct {
	// Registry holds the tools; nil means registry.Default.
	Registry *registry.Registry
	// Clock tells the time; nil means the system clock.
	Clock Clock
	// Transport sends upstream requests; nil means upstream.NewTransport(),
	// which refuses internal addresses at dial time. Tests plug in fakes;
	// an operator's own transport should keep that dial check.
	Transport http.RoundTripper
	// Upstream sets how tool requests are sent: their deadline (10 s), the
	// cap on an answer (1 MiB), retries of safe reads and the circuit
	// breaker. Nil means upstream's defaults; its Clock, when nil, is the
	// gateway's.
	Upstream *upstream.Config
	// FeeRate is the gateway fee as a share of the price; nil means 0.10.
	FeeRate *decimal.Decimal
	// QuoteTTL is how long a quote stays usable (default 5 minutes).
	QuoteTTL time.Duration
	// MaxOpenQuotes caps the quotes one principal holds open, neither used
	// nor expired, those an approval request keeps alive included
	// (default 1,000): past it, Quote answers rate_limited until one is
	// used or expires, and stores nothing, so a caller cannot grow the
	// store without bound. It is counted in the store, in the step that
	// stores the quote, so it holds across every gateway sharing it. There
	// is no setting for no cap: a negative value is refused by New.
	MaxOpenQuotes int
	// ApprovalTTL is how long an approval request waits for a person and,
	// once approved, for its call (default 30 minutes): a time a person
	// can meet, from a notification on a phone. Asking extends the quote's
	// life to the request's, its price, fee and digest unchanged; the
	// quote still serves one call.
	ApprovalTTL time.Duration
	// IdempotencyLease is how long a call holds its Idempotency-Key before a
	// retry may take it over, should the process running it die (default
	// 60 s). It must be longer than the upstream deadline.
	IdempotencyLease time.Duration
	// IdempotencyRetention is how long finished calls are kept: replayed
	// for a retry of their key, read by id, listed by ListExecutions and
	// summed by Spend (default and minimum 24 hours).
	IdempotencyRetention time.Duration
	// SpendControls supplies the operator's spend controls per principal.
	// A limit it leaves unset has its default: $25 per call,
	// $100 a UTC day, $1000 a UTC month, 60 calls a minute, 1000 an hour.
	// Callers' own settings, kept in the store, can only tighten them.
	SpendControls SpendControlsSource
	// Approvals supplies callers' standing approvals; nil means the store.
	// For a principal in approver mode only those whose ApprovedBy names
	// an approver count.
	Approvals ApprovalSource
	// Approvers says each principal's approval mode and whom each approver
	// approves for; nil puts every principal in
	// caller mode, with no approvers.
	Approvers ApproverDirectory
	// Events, when set, sends every event (section 28: approval requests
	// made and decided, calls ended ambiguous, budget alerts and limits
	// reached) through it: the gateway writes each to the store's outbox
	// in the same step as its cause, and runs an outbox.Deliverer, from
	// New to Close, that sends them and those any other gateway on the
	// store wrote, at least once, retrying for EventDelivery.RetryFor.
	// Package webhook's Sender signs and POSTs them. Nil writes no event.
	Events outbox.Sender
	// EventDelivery tunes that deliverer; nil means its defaults.
	EventDelivery *outbox.Config
	// ApprovalNotifier is told, in process, of each new approval request
	// and each decision, and of each call whose outcome is unknown, after
	// the store has it; nil tells no one. It is no delivery: a process
	// that dies loses what it was told. Events does not lose them.
	ApprovalNotifier ApprovalNotifier
	// ApprovalRequestLimit caps the approval requests one principal may
	// ask for in a window, so that an agent cannot flood the people who
	// decide them: past it, RequestApproval answers rate_limited until
	// the window ends. Zero fields mean 30 a minute; a negative Max, no
	// limit. The count is kept in the store (Store.CountEvent), and so
	// holds across every gateway sharing it.
	ApprovalRequestLimit RequestLimit
	// Receipts signs every finished execution's receipt and lists the
	// keys they verify with (see the receipt package). Nil generates a
	// key when the gateway starts and logs its public half: fine for
	// development, but its receipts stop verifying once the process is
	// gone, so a deployment configures its key.
	Receipts *receipt.Keys
	// Logger receives structured logs, among them one line per finished
	// call; nil discards them.
	Logger *slog.Logger
	// Metrics is where the gateway registers its Prometheus metrics (see
	// the README for each); nil means no metrics, at no cost. Several
	// gateways may share one registerer.
	Metrics prometheus.Registerer
	// Budgets are the organization's budgets: ceilings that teams and the
	// organization share, atomic across every gateway on the store (see
	// toolgatetype.BudgetDefinition). New refuses a malformed tree with an
	// error naming the field ("budgets[1].parent: ..."). Budgets that
	// match tokens by their Claims need the token verifier to keep those
	// claims: with package oauth, set its Config.BudgetClaims to
	// oauth.BudgetClaims(Budgets).
	Budgets []toolgatetype.BudgetDefinition
	// TracerProvider makes the gateway's OpenTelemetry spans: one per
	// quote, one per call (execute_tool) and a client span per upstream
	// attempt. Nil means no spans, at no cost.
	TracerProvider trace.TracerProvider
}

// SpendControlsSource supplies the operator's spend controls of a principal.
// Fields left nil fall back to the defaults (see Config.SpendControls).
type SpendControlsSource interface {
	SpendControls(ctx context.Context, principal string) (toolgatetype.SpendControls, error)
}

// StaticSpendControls is a SpendControlsSource from a fixed map by principal.
type StaticSpendControls map[string]toolgatetype.SpendControls

// SpendControls returns the principal's entry, or none.
func (s StaticSpendControls) SpendControls(_ context.Context, principal string) (toolgatetype.SpendControls, error) {
	return s[principal], nil
}

// ApprovalSource supplies callers' standing approvals. storage.Store
// satisfies it; an operator may supply approvals from elsewhere.
type ApprovalSource interface {
	// GetApproval returns storage.ErrNotFound when the caller has none.
	GetApproval(ctx context.Context, principal, toolID string) (storage.Approval, error)
}

// Gateway quotes and calls registered tools. Safe for concurrent use.
//
// Everything that must hold across calls (quotes, Idempotency-Keys, spend
// and rate windows, approvals) lives in its store, so any number of
// Gateways, in one process or many, can share one store. The one thing a
// Gateway remembers itself is which provider origins have been failing, for
// its circuit breaker; that only ever makes it fail fast, never admit more.
type Gateway struct {
	store storage.Store
	// executor runs admitted calls (see Gateway.run).
	executor  *executor.Executor
	registry  *registry.Registry
	clock     Clock
	feeRate   decimal.Decimal
	cfg       Config
	upstream  *upstream.Client
	controls  SpendControlsSource
	approvals ApprovalSource
	// approvalsFromStore: standing approvals are the store's, read together
	// with a quote's or a call's other reads, and where first uses are
	// remembered.
	approvalsFromStore bool
	approvers          ApproverDirectory
	notifier           ApprovalNotifier
	log                *slog.Logger
	receipts           *receipt.Keys
	obs                *observer
	// budgets is the checked Config.Budgets; nil when none are configured,
	// which costs a call nothing.
	budgets *budgets.Tree
	// events delivers the store's events (Config.Events); nil when the
	// gateway writes none.
	events *outbox.Deliverer
}

// New returns a Gateway over store. cfg may be nil.
func New(store storage.Store, cfg *Config) (*Gateway, error) {
	if store == nil {
		return nil, errors.New("toolgate: New needs a store")
	}
	c := Config{}
	if cfg != nil {
		c = *cfg
	}
	c = c.withDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	m, err := newMetrics(c.Metrics, c.Upstream.Timeout)
	if err != nil {
		return nil, err
	}
	if err := observeStoreBatches(c.Metrics, store); err != nil {
		return nil, err
	}
	obs := newObserver(m, c.TracerProvider, c.Logger)
	if obs.watchesUpstream() {
		obs.next, c.Upstream.Observer = c.Upstream.Observer, obs
	}
	up, err := upstream.New(c.Transport, c.Upstream)
	if err != nil {
		return nil, fmt.Errorf("toolgate: %w", err)
	}
	gw := &Gateway{
		store:     store,
		registry:  c.Registry,
		clock:     c.Clock,
		feeRate:   *c.FeeRate,
		cfg:       c,
		upstream:  up,
		controls:  c.SpendControls,
		approvals: c.Approvals,
		approvers: c.Approvers,
		notifier:  c.ApprovalNotifier,
		log:       c.Logger,
		obs:       obs,
		receipts:  c.Receipts,
	}
	if gw.approvals == nil {
		gw.approvals = store
	}
	if gw.receipts == nil {
		if gw.receipts, err = developmentReceiptKeys(gw.log); err != nil {
			return nil, fmt.Errorf("toolgate: %w", err)
		}
	}
	gw.approvalsFromStore = sameSource(gw.approvals, store)
	if len(c.Budgets) > 0 {
		if gw.budgets, err = budgets.New(c.Budgets); err != nil {
			return nil, fmt.Errorf("toolgate: %w", err)
		}
		if _, err = newBudgetMetrics(gw); err != nil {
			return nil, fmt.Errorf("toolgate: %w", err)
		}
	}
	if err := registerAmbiguousMetrics(gw); err != nil {
		return nil, err
	}
	if err := outbox.RegisterMetrics(c.Metrics, store, c.Clock.Now, c.Logger); err != nil {
		return nil, fmt.Errorf("toolgate: %w", err)
	}
	gw.executor = gw.newExecutor()
	if c.Events != nil {
		dc := outbox.Config{}
		if c.EventDelivery != nil {
			dc = *c.EventDelivery
		}
		if dc.Logger == nil {
			dc.Logger = c.Logger
		}
		if dc.Now == nil {
			// Events are due by the gateway's clock, which caused them.
			dc.Now = c.Clock.Now
		}
		gw.events = outbox.New(store, c.Events, &dc)
		gw.events.Start()
	}
	return gw, nil
}

func (c Config) withDefaults() Config {
	if c.Registry == nil {
		c.Registry = registry.Default
	}
	if c.Clock == nil {
		c.Clock = systemClock{}
	}
	up := c.Upstream.WithDefaults()
	if c.Upstream == nil || c.Upstream.Clock == nil {
		up.Clock = c.Clock
	}
	c.Upstream = &up
	if c.FeeRate == nil {
		rate := defaultFeeRate
		c.FeeRate = &rate
	}
	if c.QuoteTTL == 0 {
		c.QuoteTTL = DefaultQuoteTTL
	}
	if c.MaxOpenQuotes == 0 {
		c.MaxOpenQuotes = DefaultMaxOpenQuotes
	}
	if c.ApprovalTTL == 0 {
		c.ApprovalTTL = DefaultApprovalTTL
	}
	if c.IdempotencyLease == 0 {
		c.IdempotencyLease = DefaultIdempotencyLease
	}
	if c.IdempotencyRetention == 0 {
		c.IdempotencyRetention = DefaultIdempotencyRetention
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	c.ApprovalRequestLimit = c.ApprovalRequestLimit.withDefaults(DefaultApprovalRequestMax, DefaultApprovalRequestWindow)
	return c
}

func (c Config) validate() error {
	switch {
	case c.FeeRate.IsNegative() || c.FeeRate.GreaterThan(decimal.NewFromInt(1)):
		return fmt.Errorf("toolgate: FeeRate %s must be between 0 and 1", c.FeeRate)
	case c.QuoteTTL < 0:
		return errors.New("toolgate: QuoteTTL must be positive")
	case c.MaxOpenQuotes < 0:
		return errors.New("toolgate: MaxOpenQuotes must be positive")
	case c.ApprovalTTL < 0:
		return errors.New("toolgate: ApprovalTTL must be positive")
	case c.IdempotencyLease < 0:
		return errors.New("toolgate: IdempotencyLease must be positive")
	case c.IdempotencyRetention < DefaultIdempotencyRetention:
		return fmt.Errorf("toolgate: IdempotencyRetention must be at least %s", DefaultIdempotencyRetention)
	case c.ApprovalRequestLimit.Window < 0:
		return errors.New("toolgate: ApprovalRequestLimit.Window must be positive")
	case c.Upstream.Timeout >= c.IdempotencyLease:
		// A run must finish within its lease, or a retry could take over a
		// call that is still running and reach the upstream twice.
		return fmt.Errorf("toolgate: the upstream Timeout %s must be shorter than IdempotencyLease %s", c.Upstream.Timeout, c.IdempotencyLease)
	}
	return nil
}

// Registry returns the gateway's registry.
func (g *Gateway) Registry() *registry.Registry { return g.registry }

// Clock returns the gateway's clock, so that the layers serving it (the
// approval page's sessions, say) keep the same time.
func (g *Gateway) Clock() Clock { return g.clock }

// lookup resolves a tool by slug or id into a tool_not_found error.
func (g *Gateway) lookup(slugOrID string) (*registry.Version, error) {
	v, err := g.registry.Lookup(slugOrID)
	if err != nil {
		return nil, newError(toolgatetype.CodeToolNotFound, "no tool %q is registered", slugOrID)
	}
	return v, nil
}

func validPrincipal(principal string) error {
	if principal == "" || len(principal) > 255 {
		return newError(toolgatetype.CodeUnauthorized, "a principal is required")
	}
	// A principal is kept with everything it does: one no store can keep
	// is refused here, before any store is asked.
	if p := textcheck.Problem(principal); p != "" {
		return newError(toolgatetype.CodeUnauthorized, "the principal %s", p)
	}
	return nil
}
