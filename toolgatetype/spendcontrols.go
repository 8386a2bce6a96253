package toolgatetype

import "github.com/shopspring/decimal"

// SpendControls are one principal's limits. Nil pointers mean "not set" so
// that stored caller settings can be layered over operator defaults.
type SpendControls struct {
	MaxPerCallUSD      *decimal.Decimal
	DailyLimitUSD      *decimal.Decimal
	MonthlyLimitUSD    *decimal.Decimal
	RateLimitPerMinute *int
	RateLimitPerHour   *int
	Tools              map[string]ToolSpendControls // keyed by tool slug
}

// ToolSpendControls are the limits of one principal on one tool.
type ToolSpendControls struct {
	Allowed            *bool
	MaxPerCallUSD      *decimal.Decimal
	DailyLimitUSD      *decimal.Decimal
	MonthlyLimitUSD    *decimal.Decimal
	RateLimitPerMinute *int
	RateLimitPerHour   *int
}

// SpendControlsBody is a caller's own spend controls on the wire, the body
// of GET and PUT /v1/spend-controls. Amounts are decimal text; null or
// absent means "not set". Tools, when sent with PUT, replaces the per-tool
// controls (an empty object removes them all); absent, it keeps them.
type SpendControlsBody struct {
	MaxPerCallUSD      *string                          `json:"maxPerCallUsd"`
	DailyLimitUSD      *string                          `json:"dailyLimitUsd"`
	MonthlyLimitUSD    *string                          `json:"monthlyLimitUsd"`
	RateLimitPerMinute *int                             `json:"rateLimitPerMinute"`
	RateLimitPerHour   *int                             `json:"rateLimitPerHour"`
	Tools              map[string]ToolSpendControlsBody `json:"tools,omitzero"`
}

// ToolSpendControlsBody is a caller's own spend controls of one tool on the
// wire, the body of GET and PUT /v1/spend-controls/tools/{tool}.
type ToolSpendControlsBody struct {
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
	s := d.StringFixed(4)
	return &s
}

func amountIn(s *string, field string) (*decimal.Decimal, error) {
	if s == nil {
		return nil, nil
	}
	d, err := decimal.NewFromString(*s)
	if err != nil {
		return nil, Errorf(CodeInvalidRequest, "%s must be a decimal amount as text, e.g. \"10.0000\"", field)
	}
	return &d, nil
}

// NewToolSpendControlsBody is t on the wire.
func NewToolSpendControlsBody(t ToolSpendControls) ToolSpendControlsBody {
	return ToolSpendControlsBody{
		Allowed:            t.Allowed,
		MaxPerCallUSD:      amountOut(t.MaxPerCallUSD),
		DailyLimitUSD:      amountOut(t.DailyLimitUSD),
		MonthlyLimitUSD:    amountOut(t.MonthlyLimitUSD),
		RateLimitPerMinute: t.RateLimitPerMinute,
		RateLimitPerHour:   t.RateLimitPerHour,
	}
}

// ToolSpendControls reads b into the library's type; an amount that is not
// a decimal is invalid_request, naming the field.
func (b ToolSpendControlsBody) ToolSpendControls() (ToolSpendControls, error) {
	return toolControlsIn(b, "")
}

func toolControlsIn(j ToolSpendControlsBody, prefix string) (ToolSpendControls, error) {
	var t ToolSpendControls
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
	t.Allowed, t.RateLimitPerMinute, t.RateLimitPerHour = j.Allowed, j.RateLimitPerMinute, j.RateLimitPerHour
	return t, nil
}

// NewSpendControlsBody is c on the wire. Tools is nil exactly when
// c.Tools is, so that a body sent with PUT keeps the per-tool controls
// when c has none to give.
func NewSpendControlsBody(c SpendControls) SpendControlsBody {
	out := SpendControlsBody{
		MaxPerCallUSD:      amountOut(c.MaxPerCallUSD),
		DailyLimitUSD:      amountOut(c.DailyLimitUSD),
		MonthlyLimitUSD:    amountOut(c.MonthlyLimitUSD),
		RateLimitPerMinute: c.RateLimitPerMinute,
		RateLimitPerHour:   c.RateLimitPerHour,
	}
	if c.Tools != nil {
		out.Tools = make(map[string]ToolSpendControlsBody, len(c.Tools))
		for slug, t := range c.Tools {
			out.Tools[slug] = NewToolSpendControlsBody(t)
		}
	}
	return out
}

// SpendControls reads b into the library's type; an amount that is not a
// decimal is invalid_request, naming the field.
func (b SpendControlsBody) SpendControls() (SpendControls, error) {
	global, err := toolControlsIn(ToolSpendControlsBody{
		MaxPerCallUSD: b.MaxPerCallUSD, DailyLimitUSD: b.DailyLimitUSD, MonthlyLimitUSD: b.MonthlyLimitUSD,
		RateLimitPerMinute: b.RateLimitPerMinute, RateLimitPerHour: b.RateLimitPerHour,
	}, "")
	if err != nil {
		return SpendControls{}, err
	}
	c := SpendControls{
		MaxPerCallUSD: global.MaxPerCallUSD, DailyLimitUSD: global.DailyLimitUSD, MonthlyLimitUSD: global.MonthlyLimitUSD,
		RateLimitPerMinute: global.RateLimitPerMinute, RateLimitPerHour: global.RateLimitPerHour,
	}
	if b.Tools != nil {
		c.Tools = make(map[string]ToolSpendControls, len(b.Tools))
		for slug, t := range b.Tools {
			if c.Tools[slug], err = toolControlsIn(t, "tools."+slug+"."); err != nil {
				return SpendControls{}, err
			}
		}
	}
	return c, nil
}
