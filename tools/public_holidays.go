package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"time"

	"github.com/shopspring/decimal"

	"github.com/toolgate/toolgate/registry"
)

const holidaysProvider = "the Nager.Date holiday service"

const holidaysInputSchema = `{
  "$schema": "http://json-schema.org/draft-07/schema#",
  "type": "object",
  "required": ["countryCode", "year"],
  "additionalProperties": false,
  "properties": {
    "countryCode": {"type": "string", "pattern": "^[A-Z]{2}$", "description": "ISO 3166-1 alpha-2 country code, e.g. PT."},
    "year": {"type": "integer", "minimum": 1900, "maximum": 2200}
  }
}`

const holidaysOutputSchema = `{
  "$schema": "http://json-schema.org/draft-07/schema#",
  "type": "array",
  "items": {
    "type": "object",
    "required": ["date", "name", "countryCode", "nationalHoliday", "holidayTypes"],
    "additionalProperties": false,
    "properties": {
      "date": {"type": "string", "format": "date"},
      "name": {"type": "string"},
      "countryCode": {"type": "string"},
      "nationalHoliday": {"type": "boolean"},
      "subdivisionCodes": {"type": ["array", "null"], "items": {"type": "string"}, "description": "ISO 3166-2 codes of the regions that observe it; null when national."},
      "holidayTypes": {"type": "array", "items": {"type": "string"}, "description": "Public, Bank, School, Authorities, Optional or Observance."}
    }
  }
}`

// PublicHolidays returns the public-holidays tool: national and regional
// public holidays for a country and year from Nager.Date. It is free,
// versioned and declared read-only.
func PublicHolidays() *registry.Tool {
	return &registry.Tool{
		Slug:        "public-holidays",
		Name:        "Public Holidays",
		Description: "National and regional public holidays for a country and year",
		Category:    "Productivity",
		Tags:        []string{"holidays", "calendar", "scheduling"},
		Provider: registry.Provider{
			Name:      "Nager.Date",
			TrustTier: "unverified",
		},
		Endpoint: registry.Endpoint{
			Origin: "https://date.nager.at",
			Method: http.MethodGet,
			Path:   "/api/v4/Holidays/{countryCode}/{year}",
		},
		Version:      1,
		Immutable:    true,
		Capabilities: readOnlyOpenWorld(),
		Pricing:      registry.Pricing{Type: registry.PricingFree, Amount: decimal.Zero, Currency: "USD"},
		InputSchema:  json.RawMessage(holidaysInputSchema),
		OutputSchema: json.RawMessage(holidaysOutputSchema),
		BuildRequest: buildHolidaysRequest,
		Normalize:    normalizeHolidays,
		ExampleInput: json.RawMessage(`{"countryCode":"PT","year":2027}`),
		ExampleOutput: json.RawMessage(`[{"date":"2027-01-01","name":"New Year's Day","countryCode":"PT","nationalHoliday":true,"subdivisionCodes":null,"holidayTypes":["Public"]},` +
			`{"date":"2027-07-01","name":"Madeira Day","countryCode":"PT","nationalHoliday":false,"subdivisionCodes":["PT-30"],"holidayTypes":["Public"]}]`),
		UpdatedAt: time.Date(2026, time.January, 12, 9, 10, 0, 0, time.UTC),
	}
}

func init() { registry.MustRegister(PublicHolidays()) }

type holidaysInput struct {
	CountryCode string      `json:"countryCode"`
	Year        wholeNumber `json:"year"`
}

// countryCode repeats the schema's pattern: the code and the year become
// path segments, so they are checked here too rather than trusted to a caller.
var countryCode = regexp.MustCompile(`^[A-Z]{2}$`)

func buildHolidaysRequest(ctx context.Context, origin string, input json.RawMessage) (*http.Request, error) {
	var in holidaysInput
	if err := decodeInput("public-holidays", input, &in); err != nil {
		return nil, err
	}
	if !countryCode.MatchString(in.CountryCode) {
		return nil, fmt.Errorf("public-holidays: countryCode %q is not two capital letters", in.CountryCode)
	}
	if in.Year < 1900 || in.Year > 2200 {
		return nil, fmt.Errorf("public-holidays: year %d is out of range", in.Year)
	}
	path := "/api/v4/Holidays/" + url.PathEscape(in.CountryCode) + "/" + strconv.FormatInt(int64(in.Year), 10)
	return newGetRequest(ctx, origin, path, nil)
}

// Holiday is one element of the public-holidays output.
type Holiday struct {
	Date            string `json:"date"`
	Name            string `json:"name"`
	CountryCode     string `json:"countryCode"`
	NationalHoliday bool   `json:"nationalHoliday"`
	// SubdivisionCodes lists the regions that observe a regional holiday;
	// nil (JSON null) for one observed nationwide.
	SubdivisionCodes []string `json:"subdivisionCodes"`
	HolidayTypes     []string `json:"holidayTypes"`
}

type nagerHoliday struct {
	Date             *string  `json:"date"`
	Name             *string  `json:"name"`
	CountryCode      *string  `json:"countryCode"`
	NationalHoliday  *bool    `json:"nationalHoliday"`
	SubdivisionCodes []string `json:"subdivisionCodes"`
	HolidayTypes     []string `json:"holidayTypes"`
}

// nagerProblem is the RFC 9457 problem body Nager.Date answers errors with.
type nagerProblem struct {
	Title  string `json:"title"`
	Detail string `json:"detail"`
}

func (p nagerProblem) reason() string {
	if p.Detail != "" {
		return p.Title + ": " + p.Detail
	}
	return p.Title
}

func normalizeHolidays(resp registry.UpstreamResponse) (any, error) {
	switch {
	case resp.StatusCode == http.StatusNoContent:
		// Nager.Date's way of saying it knows the country but has no data
		// for it. An empty list would read as "no holidays", which is false.
		return nil, registry.Upstreamf(registry.CodeUpstreamError, "%s does not cover this country", holidaysProvider)
	case !success(resp.StatusCode):
		return nil, upstreamFailed(holidaysProvider, resp.StatusCode, jsonReason(resp.Body, nagerProblem.reason))
	}
	var raw []nagerHoliday
	if err := decodeBody(holidaysProvider, resp.Body, &raw); err != nil {
		return nil, err
	}
	if raw == nil {
		return nil, invalid(holidaysProvider, "expected an array of holidays")
	}
	out := make([]Holiday, len(raw))
	for i, h := range raw {
		if h.Date == nil || h.Name == nil || h.CountryCode == nil || h.NationalHoliday == nil || h.HolidayTypes == nil {
			return nil, invalid(holidaysProvider, "holiday %d lacks a required field", i)
		}
		out[i] = Holiday{
			Date:             *h.Date,
			Name:             *h.Name,
			CountryCode:      *h.CountryCode,
			NationalHoliday:  *h.NationalHoliday,
			SubdivisionCodes: h.SubdivisionCodes,
			HolidayTypes:     h.HolidayTypes,
		}
	}
	return out, nil
}
