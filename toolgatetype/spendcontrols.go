package toolgatetype

import (
	"bytes"
	"encoding/json"
	"errors"

	"github.com/shopspring/decimal"
)

// SpendControls are one principal's limits. Nil pointers mean "not set" so
// that stored caller settings can be layered over operator defaults.
//
// Their JSON form is the body of GET and PUT /v1/spend-controls. Amounts
// are text with 4 decimals ("10.0000"); a limit not set is null. Tools is
// written only when not nil, and an empty map as an empty object: sent with
// PUT, tools replaces the per-tool controls (an empty object removes them
// all) and, absent, keeps them. Read, an amount is decimal text within
// ParseAmount's bounds, and one that is not is invalid_request naming the
// field ("tools.echo.dailyLimitUsd"). A member it does not know is refused rather
// than dropped, both in a request and in an answer: a misspelt limit is
// never taken as "not set", and controls read from a newer gateway are
// never put back without the limits this version does not know.
type SpendControls struct {
	MaxPerCallUSD      *decimal.Decimal
	DailyLimitUSD      *decimal.Decimal
	MonthlyLimitUSD    *decimal.Decimal
	RateLimitPerMinute *int
	RateLimitPerHour   *int
	Tools              map[string]ToolSpendControls // keyed by tool slug
}

// ToolSpendControls are the limits of one principal on one tool. Their
// JSON form, the body of GET and PUT /v1/spend-controls/tools/{tool}, is
// that of SpendControls' limits, with allowed.
type ToolSpendControls struct {
	Allowed            *bool
	MaxPerCallUSD      *decimal.Decimal
	DailyLimitUSD      *decimal.Decimal
	MonthlyLimitUSD    *decimal.Decimal
	RateLimitPerMinute *int
	RateLimitPerHour   *int
}

// spendControlsJSON and toolSpendControlsJSON are the JSON forms. Their
// limits are spelt out in each rather than shared by embedding, since a
// decoding error would name an embedded field by its path through the
// embedded struct.
type spendControlsJSON struct {
	MaxPerCallUSD      *string                          `json:"maxPerCallUsd"`
	DailyLimitUSD      *string                          `json:"dailyLimitUsd"`
	MonthlyLimitUSD    *string                          `json:"monthlyLimitUsd"`
	RateLimitPerMinute *int                             `json:"rateLimitPerMinute"`
	RateLimitPerHour   *int                             `json:"rateLimitPerHour"`
	Tools              map[string]toolSpendControlsJSON `json:"tools,omitzero"`
}

type toolSpendControlsJSON struct {
	Allowed            *bool   `json:"allowed"`
	MaxPerCallUSD      *string `json:"maxPerCallUsd"`
	DailyLimitUSD      *string `json:"dailyLimitUsd"`
	MonthlyLimitUSD    *string `json:"monthlyLimitUsd"`
	RateLimitPerMinute *int    `json:"rateLimitPerMinute"`
	RateLimitPerHour   *int    `json:"rateLimitPerHour"`
}

func amountOut(d *decimal.Decimal) *string {
	if d == nil {
		return nil
	}
	s := FormatUSD(*d)
	return &s
}

func amountIn(s *string, field string) (*decimal.Decimal, error) {
	if s == nil {
		return nil, nil
	}
	d, err := ParseAmount(*s)
	switch {
	case errors.Is(err, ErrAmountOutOfBounds):
		return nil, Errorf(CodeInvalidRequest, "%s %s", field, err)
	case err != nil:
		return nil, Errorf(CodeInvalidRequest, "%s must be a decimal amount as text, e.g. \"10.0000\"", field)
	}
	return &d, nil
}

// decodeStrict decodes data into v, refusing members v does not have.
func decodeStrict(data []byte, v any) error {
	if err := checkMembers(data, v); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

func (t ToolSpendControls) json() toolSpendControlsJSON {
	return toolSpendControlsJSON{
		Allowed:            t.Allowed,
		MaxPerCallUSD:      amountOut(t.MaxPerCallUSD),
		DailyLimitUSD:      amountOut(t.DailyLimitUSD),
		MonthlyLimitUSD:    amountOut(t.MonthlyLimitUSD),
		RateLimitPerMinute: t.RateLimitPerMinute,
		RateLimitPerHour:   t.RateLimitPerHour,
	}
}

// controls reads j; an amount that is not a decimal is invalid_request
// naming its field, after prefix.
func (j toolSpendControlsJSON) controls(prefix string) (ToolSpendControls, error) {
	t := ToolSpendControls{Allowed: j.Allowed, RateLimitPerMinute: j.RateLimitPerMinute, RateLimitPerHour: j.RateLimitPerHour}
	var err error
	if t.MaxPerCallUSD, err = amountIn(j.MaxPerCallUSD, prefix+"maxPerCallUsd"); err != nil {
		return t, err
	}
	if t.DailyLimitUSD, err = amountIn(j.DailyLimitUSD, prefix+"dailyLimitUsd"); err != nil {
		return t, err
	}
	if t.MonthlyLimitUSD, err = amountIn(j.MonthlyLimitUSD, prefix+"monthlyLimitUsd"); err != nil {
		return t, err
	}
	return t, nil
}

// MarshalJSON writes t's JSON form.
func (t ToolSpendControls) MarshalJSON() ([]byte, error) { return json.Marshal(t.json()) }

// UnmarshalJSON reads t's JSON form.
func (t *ToolSpendControls) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		return nil
	}
	var j toolSpendControlsJSON
	if err := decodeStrict(data, &j); err != nil {
		return err
	}
	read, err := j.controls("")
	if err != nil {
		return err
	}
	*t = read
	return nil
}

// MarshalJSON writes c's JSON form.
func (c SpendControls) MarshalJSON() ([]byte, error) {
	j := spendControlsJSON{
		MaxPerCallUSD:      amountOut(c.MaxPerCallUSD),
		DailyLimitUSD:      amountOut(c.DailyLimitUSD),
		MonthlyLimitUSD:    amountOut(c.MonthlyLimitUSD),
		RateLimitPerMinute: c.RateLimitPerMinute,
		RateLimitPerHour:   c.RateLimitPerHour,
	}
	if c.Tools != nil {
		j.Tools = make(map[string]toolSpendControlsJSON, len(c.Tools))
		for slug, t := range c.Tools {
			j.Tools[slug] = t.json()
		}
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads c's JSON form.
func (c *SpendControls) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		return nil
	}
	var j spendControlsJSON
	if err := decodeStrict(data, &j); err != nil {
		return err
	}
	// The global limits read as a tool's, without allowed.
	g, err := toolSpendControlsJSON{
		MaxPerCallUSD: j.MaxPerCallUSD, DailyLimitUSD: j.DailyLimitUSD, MonthlyLimitUSD: j.MonthlyLimitUSD,
		RateLimitPerMinute: j.RateLimitPerMinute, RateLimitPerHour: j.RateLimitPerHour,
	}.controls("")
	if err != nil {
		return err
	}
	read := SpendControls{
		MaxPerCallUSD: g.MaxPerCallUSD, DailyLimitUSD: g.DailyLimitUSD, MonthlyLimitUSD: g.MonthlyLimitUSD,
		RateLimitPerMinute: g.RateLimitPerMinute, RateLimitPerHour: g.RateLimitPerHour,
	}
	if j.Tools != nil {
		read.Tools = make(map[string]ToolSpendControls, len(j.Tools))
		for slug, t := range j.Tools {
			if read.Tools[slug], err = t.controls("tools." + slug + "."); err != nil {
				return err
			}
		}
	}
	*c = read
	return nil
}
