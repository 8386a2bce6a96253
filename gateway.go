package toolgate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/shopspring/decimal"
	"github.com/toolgate/toolgate/internal/budgets"
	"github.com/toolgate/toolgate/internal/executor"
	"github.com/toolgate/toolgate/internal/pricing"
	"github.com/toolgate/toolgate/internal/receipting"
	"github.com/toolgate/toolgate/internal/ruling"
	"github.com/toolgate/toolgate/internal/telemetry"
	"github.com/toolgate/toolgate/internal/textcheck"
	"github.com/toolgate/toolgate/internal/toolrun"
	"github.com/toolgate/toolgate/outbox"
	"github.com/toolgate/toolgate/receipt"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/rules"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
	"github.com/toolgate/toolgate/upstream"
	"go.opentelemetry.io/otel/trace"
)

// Defaults for Config fields left zero.
const (
	DefaultQuoteTTL              = 5 * time.Minute
	DefaultApprovalTTL           = 30 * time.Minute
	DefaultIdempotencyLease      = 60 * time.Second
	DefaultIdempotencyRetention  = 24 * time.Hour
	DefaultMaxOpenQuotes         = 1000
	DefaultApprovalRequestMax    = 30
	DefaultApprovalRequestWindow = time.Minute
)

// Config holds a Gateway's optional dependencies and settings. A nil
// *Config, and every zero field, means the default.
type Config struct {
	// Registry holds the tools; nil means registry.Default.
	Registry *registry.Registry
	// Clock tells the time; nil means the system clock.
	Clock toolgatetype.Clock
	// Transport sends upstream requests; nil means upstream.NewTransport(),
	// which refuses internal addresses at dial time.
	Transport http.RoundTripper
	// Upstream sets the deadline, answer cap, retries and circuit breaker
	// of tool requests; nil means upstream's defaults.
	Upstream *upstream.Config
	// FeeRate is the gateway fee as a share of the price; nil means 0.10.
	FeeRate *decimal.Decimal
	// QuoteTTL is how long a quote stays usable (default 5 minutes).
	QuoteTTL time.Duration
	// MaxOpenQuotes caps the quotes one principal holds open, across every
	// gateway on the store (default 1,000): past it, Quote answers
	// rate_limited. There is no setting for no cap.
	MaxOpenQuotes int
	// ApprovalTTL is how long an approval request waits for a person and,
	// once approved, for its call (default 30 minutes).
	ApprovalTTL time.Duration
	// IdempotencyLease is how long a call holds its Idempotency-Key before a
	// retry may take it over (default 60 s); longer than the upstream
	// deadline.
	IdempotencyLease time.Duration
	// IdempotencyRetention is how long finished calls are kept (default
	// and minimum 24 hours).
	IdempotencyRetention time.Duration
	// SpendControls supplies the operator's spend controls per principal;
	// an unset limit is $25 a call, $100 a UTC day, $1000 a UTC month, 60
	// calls a minute, 1000 an hour. Callers' own can only tighten them.
	SpendControls toolgatetype.SpendControlsSource
	// Approvals supplies callers' standing approvals; nil means the store.
	Approvals ApprovalSource
	// Approvers says who approves for whom; nil puts every principal in
	// caller mode.
	Approvers toolgatetype.ApproverDirectory
	// Events, when set, sends every event (approval requests, ambiguous
	// calls, budget alerts), written to the store's outbox with its cause
	// and delivered at least once, from New to Close (package webhook's
	// Sender signs and POSTs them). Nil writes no event.
	Events outbox.Sender
	// EventDelivery tunes that delivery; nil means its defaults.
	EventDelivery *outbox.Config
	// ApprovalNotifier is told in process, with no delivery, of approval
	// requests, decisions and ambiguous calls; nil tells no one.
	ApprovalNotifier toolgatetype.ApprovalNotifier
	// ApprovalRequestLimit caps the approval requests one principal may
	// ask for, across every gateway on the store: past it, RequestApproval
	// answers rate_limited. Zero fields mean 30 a minute; a negative Max,
	// no limit.
	ApprovalRequestLimit toolgatetype.RequestLimit
	// Receipts signs every finished execution's receipt. Nil generates a
	// key at start, for development only: its receipts stop verifying
	// once the process is gone.
	Receipts *receipt.Keys
	// Logger receives one line per finished call among others; nil
	// discards them.
	Logger *slog.Logger
	// Metrics registers the gateway's Prometheus metrics (see the README);
	// nil means none. Several gateways may share one.
	Metrics prometheus.Registerer
	// Budgets are the organization's budgets, ceilings shared across every
	// gateway on the store (see toolgatetype.BudgetDefinition). Budgets
	// matching token Claims need package oauth's Config.BudgetClaims set
	// to oauth.BudgetClaims(Budgets).
	Budgets []toolgatetype.BudgetDefinition
	// TracerProvider makes OpenTelemetry spans of quotes, calls and
	// upstream attempts; nil means none.
	TracerProvider trace.TracerProvider
	// Rules are the organization's rules (package rules), compiled once
	// by New; none costs a call nothing. SetRules changes them.
	Rules []rules.Rule
}

// ApprovalSource supplies callers' standing approvals. storage.Store
// satisfies it; an operator may supply approvals from elsewhere.
type ApprovalSource interface {
	// GetApproval returns storage.ErrNotFound when the caller has none.
	GetApproval(ctx context.Context, principal, toolID string) (storage.Approval, error)
}

// Gateway quotes and calls registered tools. Safe for concurrent use.
// Everything that must hold across calls lives in its store, so any number
// of Gateways, in one process or many, can share one store.
type Gateway struct {
	store storage.Store
	// executor runs admitted calls (see Gateway.run).
	executor  *executor.Executor
	registry  *registry.Registry
	clock     toolgatetype.Clock
	feeRate   decimal.Decimal
	cfg       Config
	runner    *toolrun.Runner
	controls  toolgatetype.SpendControlsSource
	approvals ApprovalSource
	// approvalsFromStore: standing approvals are the store's, read together
	// with a quote's or a call's other reads, and where first uses are
	// remembered.
	approvalsFromStore bool
	approvers          toolgatetype.ApproverDirectory
	notifier           toolgatetype.ApprovalNotifier
	log                *slog.Logger
	receipts           *receipt.Keys
	obs                *telemetry.Observer
	// budgets is the checked Config.Budgets, swapped whole by SetBudgets:
	// a call keeps the nodes it was admitted with. Nil when none are
	// configured, which costs a call one load.
	budgets atomic.Pointer[budgets.Tree]
	// budgetMetrics is whether the budgets' metrics are registered, which
	// happens with the first budgets, at New or at SetBudgets.
	budgetMetrics   bool
	budgetMetricsMu sync.Mutex
	// events delivers the store's events (Config.Events); nil when the
	// gateway writes none.
	events *outbox.Deliverer
	// rules are the rules in force (Config.Rules, SetRules); a call
	// decides on those it read when it began.
	rules atomic.Pointer[rules.Set]
	// ruleTools are tool versions as rules see them, ruleStatics what
	// the rules reading neither input nor time decided per caller;
	// ruleObs counts and logs what the rules decided.
	ruleTools   ruling.Tools
	ruleStatics ruling.Statics
	ruleObs     *ruling.Observer
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
	obs, err := telemetry.New(telemetry.Config{
		Metrics: c.Metrics, Deadline: c.Upstream.Timeout, TracerProvider: c.TracerProvider,
		Logger: c.Logger, Registry: c.Registry,
	})
	if err != nil {
		return nil, err
	}
	if err := telemetry.ObserveStoreBatches(c.Metrics, store); err != nil {
		return nil, err
	}
	if obs.WatchesUpstream() {
		obs.Next, c.Upstream.Observer = c.Upstream.Observer, obs
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
		runner:    &toolrun.Runner{Upstream: up},
		controls:  c.SpendControls,
		approvals: c.Approvals,
		approvers: c.Approvers,
		notifier:  c.ApprovalNotifier,
		log:       c.Logger,
		obs:       obs,
		receipts:  c.Receipts,
	}
	if obs.WatchesUpstream() {
		gw.runner.Finished = obs.Finished
	}
	if gw.approvals == nil {
		gw.approvals = store
	}
	if gw.receipts == nil {
		if gw.receipts, err = receipting.DevelopmentKeys(gw.log); err != nil {
			return nil, fmt.Errorf("toolgate: %w", err)
		}
	}
	gw.approvalsFromStore = sameSource(gw.approvals, store)
	if err := gw.SetRules(c.Rules); err != nil {
		return nil, err
	}
	if gw.ruleObs, err = ruling.NewObserver(c.Metrics, c.Logger, c.Clock.Now); err != nil {
		return nil, fmt.Errorf("toolgate: %w", err)
	}
	if err := gw.SetBudgets(c.Budgets); err != nil {
		return nil, err
	}
	if err := telemetry.RegisterAmbiguous(c.Metrics, store, c.Clock.Now, c.Logger); err != nil {
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
		rate := pricing.DefaultFeeRate
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
	c.ApprovalRequestLimit = limitWithDefaults(c.ApprovalRequestLimit, DefaultApprovalRequestMax, DefaultApprovalRequestWindow)
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
func (g *Gateway) Clock() toolgatetype.Clock { return g.clock }

// lookup resolves a tool by slug or id into a tool_not_found error.
func (g *Gateway) lookup(slugOrID string) (*registry.Version, error) {
	v, err := g.registry.Lookup(slugOrID)
	if err != nil {
		return nil, errToolNotFound(slugOrID)
	}
	return v, nil
}

func errToolNotFound(slugOrID string) *toolgatetype.Error {
	return newError(toolgatetype.CodeToolNotFound, "no tool %q is registered", slugOrID)
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

// Close stops the delivery of events (Config.Events) once the attempts in
// progress are recorded, or when ctx is done; undelivered events stay in
// the store. Call it after the last call, before closing the store.
func (g *Gateway) Close(ctx context.Context) error {
	if g.events != nil {
		g.events.Close(ctx)
	}
	return context.Cause(ctx)
}

// systemClock is the real clock.
type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// PrincipalGateway is a Gateway bound to one principal: the embedded
// counterpart of a remote client holding that principal's API key. It is
// a Caller. Safe for concurrent use.
type PrincipalGateway struct {
	gw        *Gateway
	principal string
}

// Interface guard.
var _ toolgatetype.Caller = (*PrincipalGateway)(nil)

// For returns the gateway bound to principal, for agent code that calls
// tools as that principal and should not be able to act as another.
func (g *Gateway) For(principal string) *PrincipalGateway {
	return &PrincipalGateway{gw: g, principal: principal}
}

// Principal is the principal the gateway is bound to.
func (p *PrincipalGateway) Principal() string { return p.principal }

// Quote is Gateway.Quote as the bound principal.
func (p *PrincipalGateway) Quote(ctx context.Context, tool string) (*toolgatetype.QuoteResult, error) {
	return p.gw.Quote(ctx, p.principal, tool)
}

// Call is Gateway.Call as the bound principal, with a new random
// Idempotency-Key when req has none, as a remote client sends one; the key
// comes back in the result.
func (p *PrincipalGateway) Call(ctx context.Context, req toolgatetype.CallRequest) (*toolgatetype.CallResult, error) {
	if req.IdempotencyKey == "" {
		req.IdempotencyKey = toolgatetype.NewIdempotencyKey()
	}
	return p.gw.Call(ctx, p.principal, req)
}
