package registry

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"github.com/toolgate/toolgate/toolgatetype"
)

// Tool is one version of a registered tool: what it is, who provides it, where
// it forwards, what it may do, what it costs, its input and output schemas, and
// how to build its upstream request and normalize the upstream response.
//
// Everything but the trust facts (Provider.PaymentVerified, Endpoint.Verified
// and Endpoint.VerifiedAt) and the origin is part of the manifest and so of
// the manifest digest: changing any of it is a new version. Trust facts are
// the operator's to change at runtime with Registry.SetTrust.
type Tool struct {
	// ID is the tool's stable identifier (a UUID). Empty means derived from the slug.
	ID          string
	Slug        string
	Name        string
	Description string
	Category    string
	Tags        []string
	LogoURL     *string

	Provider Provider
	Endpoint Endpoint

	// Version is the version number, starting at 1.
	Version int
	// Immutable is true when this version is pinned by a manifest digest.
	// A tool without an immutable version is listed but never callable.
	Immutable bool

	// Capabilities as declared by the provider; nil means not declared.
	Capabilities *Capabilities
	Pricing      Pricing

	// InputSchema is the JSON Schema of the call input (required).
	InputSchema json.RawMessage
	// OutputSchema is the JSON Schema of the normalized output; nil when the
	// provider declares none, in which case every execution fails.
	OutputSchema json.RawMessage

	// BuildRequest turns a validated input into the upstream request against
	// origin (scheme://host[:port], no trailing slash).
	BuildRequest func(ctx context.Context, origin string, input json.RawMessage) (*http.Request, error)
	// Normalize maps an upstream response to the declared output shape.
	// It must drop every field outside that shape; the gateway validates the
	// result against OutputSchema afterwards. An error is a failed execution.
	Normalize func(resp UpstreamResponse) (any, error)
	// HTTP is, for a tool defined by a manifest file (ParseManifest), the
	// request and response details its BuildRequest and Normalize follow;
	// nil for tools written in Go. It is part of the manifest digest.
	HTTP *HTTPTemplate

	// Invoke, when set, runs a call of a tool that is not one HTTP request
	// (a tool of an upstream MCP server): the gateway calls it with the
	// validated input in place of BuildRequest, the upstream client and
	// Normalize, once per call, and validates what it returns against
	// OutputSchema as it would a normalized answer. Failures are
	// *UpstreamError; one whose Sent is true may have run. Such a tool
	// needs no BuildRequest, Normalize or Endpoint.Origin.
	Invoke func(ctx context.Context, input json.RawMessage) (any, error)
	// Upstream is, for a tool an upstream MCP server serves, where it
	// comes from and its definition as served; nil for other tools. All
	// but its pin are part of the manifest digest.
	Upstream *MCPUpstream
	// TokenExchange, when set, sends the provider a token exchanged for
	// the caller's own; nil sends what the tool always sends. It is not
	// part of the manifest digest.
	TokenExchange *TokenExchange

	// Examples for documentation; optional.
	ExampleInput  json.RawMessage
	ExampleOutput json.RawMessage

	// UpdatedAt is when this version was published.
	UpdatedAt time.Time
}

// UpstreamResponse is what the gateway hands to Tool.Normalize: the status,
// the headers and the body, already capped in size.
type UpstreamResponse struct {
	StatusCode int
	Header     http.Header
	Body       []byte
}

// Provider is who operates the upstream behind a tool.
type Provider struct {
	ID   string
	Name string
	// TrustTier is "unverified" or "basic" for the built-in tools.
	TrustTier string
	// PaymentVerified says the provider completed payment verification.
	PaymentVerified bool
}

// Endpoint is where a tool forwards and whether the operator has verified it.
type Endpoint struct {
	// Origin is scheme://host[:port] of the upstream provider.
	Origin string
	// Method and Path describe the upstream operation, for the manifest.
	Method string
	Path   string
	// Verified says the operator verified the origin; VerifiedAt when.
	Verified   bool
	VerifiedAt *time.Time
}

// Pricing types.
const (
	PricingFree    = "free"
	PricingPerCall = "per_call"
)

// Pricing is the provider's price per call, before the gateway fee.
type Pricing struct {
	Type     string          // PricingFree or PricingPerCall
	Amount   decimal.Decimal // in Currency
	Currency string          // always "USD"
}

// MaxPriceWholeDigits bounds a tool's price more tightly than other amounts
// (toolgatetype.MaxAmountWholeDigits): a price is summed, with its fee, into
// the stores' totals of every call, and at most 12 digits before the point
// (under a trillion USD a call, as the manifest format says) keeps every
// store's columns and sums exact.
const MaxPriceWholeDigits = 12

// ErrPriceTooLarge is a price of MaxPriceWholeDigits digits or more
// before the point.
var ErrPriceTooLarge = errors.New("must have at most 12 digits before the point and 4 after it")

// CheckPrice reports whether amount can be a tool's price: within every
// amount's bounds (toolgatetype.CheckAmount), and under a trillion.
func CheckPrice(amount decimal.Decimal) error {
	if err := toolgatetype.CheckAmount(amount); err != nil {
		return err
	}
	if amount.Abs().Cmp(maxPrice) >= 0 {
		return ErrPriceTooLarge
	}
	return nil
}

var maxPrice = decimal.New(1, MaxPriceWholeDigits)

// Paid reports whether a call costs anything.
func (p Pricing) Paid() bool { return p.Type != PricingFree && p.Amount.IsPositive() }

// toolNamespace derives stable tool and provider ids from slugs, so the
// same tool has the same id on every gateway instance without coordination.
var toolNamespace = uuid.MustParse("6f1c1f0e-7d4b-4c53-9a57-2d8f1b7f0a10")

// StableID returns the UUID derived from name, used for tools and providers
// that do not set their own id.
func StableID(name string) string {
	return uuid.NewSHA1(toolNamespace, []byte(name)).String()
}
