package tools

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/toolgate/toolgate/registry"
)

const exchangeProvider = "the Frankfurter exchange-rate service"

// Currency codes are three letters; Frankfurter uppercases them itself, so
// either case is accepted and the tool sends them uppercased. The patterns
// also keep anything but codes and commas out of the upstream query.
const exchangeInputSchema = `{
  "$schema": "http://json-schema.org/draft-07/schema#",
  "type": "object",
  "required": ["base", "quotes"],
  "additionalProperties": false,
  "properties": {
    "base": {"type": "string", "pattern": "^[A-Za-z]{3}$", "description": "ISO 4217 code of the base currency, e.g. USD."},
    "quotes": {"type": "string", "pattern": "^[A-Za-z]{3}(,[A-Za-z]{3})*$", "description": "Comma-separated ISO 4217 codes of the target currencies, e.g. EUR,GBP."},
    "date": {"type": "string", "format": "date", "description": "Historical date, YYYY-MM-DD; when omitted the current rates apply."}
  }
}`

const exchangeOutputSchema = `{
  "$schema": "http://json-schema.org/draft-07/schema#",
  "type": "array",
  "items": {
    "type": "object",
    "required": ["date", "base", "quote", "rate"],
    "additionalProperties": false,
    "properties": {
      "date": {"type": "string", "format": "date", "description": "Date the rate was published; weekends and holidays resolve to the last publication."},
      "base": {"type": "string"},
      "quote": {"type": "string"},
      "rate": {"type": "number", "description": "Units of quote per one unit of base."}
    }
  }
}`

// ExchangeRates returns the exchange-rates tool: current or historical
// central-bank reference rates from Frankfurter. It is free, versioned and
// declared read-only.
func ExchangeRates() *registry.Tool {
	return &registry.Tool{
		Slug:        "exchange-rates",
		Name:        "Live Exchange Rates",
		Description: "Current or historical exchange rates from central-bank data",
		Category:    "Finance",
		Tags:        []string{"currency", "exchange-rates", "forex", "ecb"},
		Provider: registry.Provider{
			Name:      "Frankfurter",
			TrustTier: "unverified",
		},
		Endpoint: registry.Endpoint{
			Origin: "https://api.frankfurter.dev",
			Method: http.MethodGet,
			Path:   "/v2/rates",
		},
		Version:       1,
		Immutable:     true,
		Capabilities:  readOnlyOpenWorld(),
		Pricing:       registry.Pricing{Type: registry.PricingFree, Amount: decimal.Zero, Currency: "USD"},
		InputSchema:   json.RawMessage(exchangeInputSchema),
		OutputSchema:  json.RawMessage(exchangeOutputSchema),
		BuildRequest:  buildExchangeRequest,
		Normalize:     normalizeExchangeRates,
		ExampleInput:  json.RawMessage(`{"base":"USD","quotes":"EUR,GBP"}`),
		ExampleOutput: json.RawMessage(`[{"date":"2026-03-25","base":"USD","quote":"EUR","rate":0.9251},{"date":"2026-03-25","base":"USD","quote":"GBP","rate":0.7734}]`),
		UpdatedAt:     time.Date(2026, time.January, 12, 9, 5, 0, 0, time.UTC),
	}
}

func init() { registry.MustRegister(ExchangeRates()) }

type exchangeInput struct {
	Base   string `json:"base"`
	Quotes string `json:"quotes"`
	Date   string `json:"date"`
}

func buildExchangeRequest(ctx context.Context, origin string, input json.RawMessage) (*http.Request, error) {
	var in exchangeInput
	if err := decodeInput("exchange-rates", input, &in); err != nil {
		return nil, err
	}
	q := url.Values{}
	q.Set("base", strings.ToUpper(in.Base))
	q.Set("quotes", strings.ToUpper(in.Quotes))
	if in.Date != "" {
		q.Set("date", in.Date)
	}
	return newGetRequest(ctx, origin, "/v2/rates", q)
}

// ExchangeRate is one element of the exchange-rates output: the rate of
// Quote in units per one Base, as published on Date.
type ExchangeRate struct {
	Date  string  `json:"date"`
	Base  string  `json:"base"`
	Quote string  `json:"quote"`
	Rate  float64 `json:"rate"`
}

// frankfurterRate holds the declared fields only; pointers tell a missing
// field from a zero one.
type frankfurterRate struct {
	Date  *string  `json:"date"`
	Base  *string  `json:"base"`
	Quote *string  `json:"quote"`
	Rate  *float64 `json:"rate"`
}

// frankfurterError is Frankfurter's error body, e.g.
// {"status":422,"message":"invalid currency: FOO"}.
type frankfurterError struct {
	Message string `json:"message"`
}

func normalizeExchangeRates(resp registry.UpstreamResponse) (any, error) {
	if !success(resp.StatusCode) {
		return nil, upstreamFailed(exchangeProvider, resp.StatusCode,
			jsonReason(resp.Body, func(e frankfurterError) string { return e.Message }))
	}
	var raw []frankfurterRate
	if err := decodeBody(exchangeProvider, resp.Body, &raw); err != nil {
		return nil, err
	}
	if raw == nil {
		return nil, invalid(exchangeProvider, "expected an array of rates")
	}
	out := make([]ExchangeRate, len(raw))
	for i, r := range raw {
		if r.Date == nil || r.Base == nil || r.Quote == nil || r.Rate == nil {
			return nil, invalid(exchangeProvider, "rate %d lacks its date, base, quote or rate", i)
		}
		out[i] = ExchangeRate{Date: *r.Date, Base: *r.Base, Quote: *r.Quote, Rate: *r.Rate}
	}
	return out, nil
}
