package toolgate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	"github.com/shopspring/decimal"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/storage"
)

// Defaults for Config fields left zero.
const (
	DefaultQuoteTTL             = 5 * time.Minute
	DefaultIdempotencyLease     = 60 * time.Second
	DefaultIdempotencyRetention = 24 * time.Hour
	DefaultUpstreamTimeout      = 10 * time.Second
	DefaultMaxUpstreamBytes     = 1 << 20
)

// Config holds a Gateway's optional dependencies and settings. A nil
// *Config, and every zero field, means the default.
type Config struct {
	// Registry holds the tools; nil means registry.Default.
	Registry *registry.Registry
	// Clock tells the time; nil means the system clock.
	Clock Clock
	// Transport sends upstream requests; nil means NewUpstreamTransport(),
	// which refuses internal addresses at dial time. Tests plug in fakes;
	// an operator's own transport should keep that dial check.
	Transport http.RoundTripper
	// FeeRate is the gateway fee as a share of the price; nil means 0.10.
	FeeRate *decimal.Decimal
	// QuoteTTL is how long a quote stays usable (default 5 minutes).
	QuoteTTL time.Duration
	// IdempotencyLease is how long a call holds its Idempotency-Key before a
	// retry may take it over, should the process running it die (default 60 s).
	IdempotencyLease time.Duration
	// IdempotencyRetention is how long finished records are kept for replay
	// (default and minimum 24 hours).
	IdempotencyRetention time.Duration
	// UpstreamTimeout bounds each call's upstream exchange, retries
	// included (default 10 s).
	UpstreamTimeout time.Duration
	// MaxUpstreamBytes caps an upstream response body (default 1 MiB).
	MaxUpstreamBytes int64
	// UpstreamAttempts is how many times a safe read may be tried (default 3).
	UpstreamAttempts int
	// UpstreamCheckRetry decides whether to try again; nil means RetrySafeReads.
	UpstreamCheckRetry retryablehttp.CheckRetry
	// UpstreamBackoff says how long to wait before trying again; nil means JitteredBackoff.
	UpstreamBackoff retryablehttp.Backoff
	// BreakerThreshold is how many consecutive failures of an upstream open
	// its circuit (default 5); BreakerCooldown how long it stays open (30 s).
	BreakerThreshold int
	BreakerCooldown  time.Duration
	// SpendControls supplies the operator's spend controls per principal;
	// nil means the contract defaults for everyone. Callers' own settings,
	// kept in the store, can only tighten them.
	SpendControls SpendControlsSource
	// Approvals supplies callers' standing approvals; nil means the store.
	Approvals ApprovalSource
	// Logger receives structured logs; nil discards them.
	Logger *slog.Logger
}

// SpendControlsSource supplies the operator's spend controls of a principal.
// Fields left nil fall back to the contract defaults.
type SpendControlsSource interface {
	SpendControls(ctx context.Context, principal string) (storage.SpendControls, error)
}

// StaticSpendControls is a SpendControlsSource from a fixed map by principal.
type StaticSpendControls map[string]storage.SpendControls

// SpendControls returns the principal's entry, or none.
func (s StaticSpendControls) SpendControls(_ context.Context, principal string) (storage.SpendControls, error) {
	return s[principal], nil
}

// ApprovalSource supplies callers' standing approvals. storage.Store
// satisfies it; an operator may supply approvals from elsewhere.
type ApprovalSource interface {
	// GetApproval returns storage.ErrNotFound when the caller has none.
	GetApproval(ctx context.Context, principal, toolID string) (storage.Approval, error)
}

// Gateway quotes and calls registered tools. It keeps no state of its own
// beyond its configuration, so any number of Gateways, in one process or
// many, can share one store. Safe for concurrent use.
type Gateway struct {
	store     storage.Store
	registry  *registry.Registry
	clock     Clock
	feeRate   decimal.Decimal
	cfg       Config
	upstream  *upstreamClient
	controls  SpendControlsSource
	approvals ApprovalSource
	// approvalsFromStore: standing approvals are the store's, read together
	// with a quote's or a call's other reads, and where first uses are
	// remembered.
	approvalsFromStore bool
	log                *slog.Logger
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
	gw := &Gateway{
		store:     store,
		registry:  c.Registry,
		clock:     c.Clock,
		feeRate:   *c.FeeRate,
		cfg:       c,
		controls:  c.SpendControls,
		approvals: c.Approvals,
		log:       c.Logger,
	}
	if gw.approvals == nil {
		gw.approvals = store
	}
	gw.approvalsFromStore = sameSource(gw.approvals, store)
	gw.upstream = newUpstreamClient(c)
	return gw, nil
}

func (c Config) withDefaults() Config {
	if c.Registry == nil {
		c.Registry = registry.Default
	}
	if c.Clock == nil {
		c.Clock = SystemClock{}
	}
	if c.Transport == nil {
		c.Transport = NewUpstreamTransport()
	}
	if c.FeeRate == nil {
		rate := DefaultFeeRate
		c.FeeRate = &rate
	}
	if c.QuoteTTL == 0 {
		c.QuoteTTL = DefaultQuoteTTL
	}
	if c.IdempotencyLease == 0 {
		c.IdempotencyLease = DefaultIdempotencyLease
	}
	if c.IdempotencyRetention == 0 {
		c.IdempotencyRetention = DefaultIdempotencyRetention
	}
	if c.UpstreamTimeout == 0 {
		c.UpstreamTimeout = DefaultUpstreamTimeout
	}
	if c.MaxUpstreamBytes == 0 {
		c.MaxUpstreamBytes = DefaultMaxUpstreamBytes
	}
	if c.UpstreamAttempts == 0 {
		c.UpstreamAttempts = DefaultUpstreamAttempts
	}
	if c.UpstreamCheckRetry == nil {
		c.UpstreamCheckRetry = RetrySafeReads
	}
	if c.UpstreamBackoff == nil {
		c.UpstreamBackoff = JitteredBackoff
	}
	if c.BreakerThreshold == 0 {
		c.BreakerThreshold = DefaultBreakerThreshold
	}
	if c.BreakerCooldown == 0 {
		c.BreakerCooldown = DefaultBreakerCooldown
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.FeeRate.IsNegative() || c.FeeRate.GreaterThan(decimal.NewFromInt(1)):
		return fmt.Errorf("toolgate: FeeRate %s must be between 0 and 1", c.FeeRate)
	case c.QuoteTTL < 0:
		return errors.New("toolgate: QuoteTTL must be positive")
	case c.IdempotencyLease < 0:
		return errors.New("toolgate: IdempotencyLease must be positive")
	case c.IdempotencyRetention < DefaultIdempotencyRetention:
		return fmt.Errorf("toolgate: IdempotencyRetention must be at least %s", DefaultIdempotencyRetention)
	case c.UpstreamTimeout < 0:
		return errors.New("toolgate: UpstreamTimeout must be positive")
	case c.UpstreamTimeout >= c.IdempotencyLease:
		// A run must finish within its lease, or a retry could take over a
		// call that is still running and reach the upstream twice.
		return fmt.Errorf("toolgate: UpstreamTimeout %s must be shorter than IdempotencyLease %s", c.UpstreamTimeout, c.IdempotencyLease)
	case c.MaxUpstreamBytes < 0:
		return errors.New("toolgate: MaxUpstreamBytes must be positive")
	case c.UpstreamAttempts < 1:
		return errors.New("toolgate: UpstreamAttempts must be at least 1")
	case c.BreakerThreshold < 1 || c.BreakerCooldown < 0:
		return errors.New("toolgate: BreakerThreshold must be at least 1 and BreakerCooldown positive")
	}
	return nil
}

// Registry returns the gateway's registry.
func (g *Gateway) Registry() *registry.Registry { return g.registry }

// FeeRate returns the gateway fee as a share of the price.
func (g *Gateway) FeeRate() decimal.Decimal { return g.feeRate }

// Amounts returns what a call of a tool at price costs under this gateway:
// the price, the fee and the total, each rounded to 4 decimals exactly as a
// quote states them.
func (g *Gateway) Amounts(price decimal.Decimal) (p, fee, total decimal.Decimal) {
	a := priceWithFee(price, g.feeRate)
	return a.Price, a.Fee, a.Total
}

// Store returns the gateway's store.
func (g *Gateway) Store() storage.Store { return g.store }

// lookup resolves a tool by slug or id into a tool_not_found error.
func (g *Gateway) lookup(slugOrID string) (*registry.Version, error) {
	v, err := g.registry.Lookup(slugOrID)
	if err != nil {
		return nil, newError(CodeToolNotFound, "no tool %q is registered", slugOrID)
	}
	return v, nil
}

func validPrincipal(principal string) error {
	if principal == "" || len(principal) > 255 {
		return newError(CodeUnauthorized, "a principal is required")
	}
	return nil
}
