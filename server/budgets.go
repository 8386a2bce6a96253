package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/toolgate/toolgate/internal/budgets"
	"github.com/toolgate/toolgate/toolgatetype"
)

// budgetJSON is one entry of "budgets", its members as
// toolgatetype.BudgetDefinition spells them in JSON.
type budgetJSON struct {
	ID                 *text                      `json:"id"`
	Name               *text                      `json:"name"`
	Parent             *text                      `json:"parent"`
	Members            []text                     `json:"members"`
	Claims             map[string]*claimValue     `json:"claims"`
	Everyone           *bool                      `json:"everyone"`
	DailyLimitUSD      *amount                    `json:"dailyLimitUsd"`
	WeeklyLimitUSD     *amount                    `json:"weeklyLimitUsd"`
	MonthlyLimitUSD    *amount                    `json:"monthlyLimitUsd"`
	RateLimitPerMinute *count                     `json:"rateLimitPerMinute"`
	Tools              map[string]*budgetToolJSON `json:"tools"`
	Alerts             []fraction                 `json:"alerts"`
	TimeZone           *string                    `json:"timeZone"` // checked by the gateway, which reads the zone
	Approvers          []text                     `json:"approvers"`
}

// budgetToolJSON is an entry of a budget's "tools".
type budgetToolJSON struct {
	Allowed         *bool   `json:"allowed"`
	DailyLimitUSD   *amount `json:"dailyLimitUsd"`
	WeeklyLimitUSD  *amount `json:"weeklyLimitUsd"`
	MonthlyLimitUSD *amount `json:"monthlyLimitUsd"`
}

// budgets checks "budgets": each entry's values here, where the path of
// every field is known; what concerns the tree as a whole (ids given
// twice, parents, cycles, a budget with no limit) is the gateway's own
// check, run by checkBudgets once the rest of the file is read.
func (p configParser) budgets(path string, in []budgetJSON) ([]toolgatetype.BudgetDefinition, error) {
	if in == nil {
		return nil, nil
	}
	out := make([]toolgatetype.BudgetDefinition, 0, len(in))
	for i, item := range in {
		b, err := p.budget(index(path, i), item)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

func (p configParser) budget(path string, in budgetJSON) (toolgatetype.BudgetDefinition, error) {
	b := toolgatetype.BudgetDefinition{
		Members: texts(in.Members), Approvers: texts(in.Approvers),
		DailyLimitUSD: in.DailyLimitUSD.decimalPtr(), WeeklyLimitUSD: in.WeeklyLimitUSD.decimalPtr(), MonthlyLimitUSD: in.MonthlyLimitUSD.decimalPtr(),
		RateLimitPerMinute: in.RateLimitPerMinute.intPtr(),
	}
	for _, f := range []struct {
		dst *string
		src *text
	}{{&b.ID, in.ID}, {&b.Name, in.Name}, {&b.Parent, in.Parent}} {
		if f.src != nil {
			*f.dst = string(*f.src)
		}
	}
	if in.TimeZone != nil {
		b.TimeZone = *in.TimeZone
	}
	if in.Everyone != nil {
		b.Everyone = *in.Everyone
	}
	if in.Claims != nil {
		b.Claims = make(map[string]string, len(in.Claims))
		for _, name := range slices.Sorted(maps.Keys(in.Claims)) {
			if name == "" {
				return toolgatetype.BudgetDefinition{}, errorf(at(path, "claims"), "a claim's name is empty")
			}
			if v := in.Claims[name]; v != nil {
				b.Claims[name] = string(*v)
			}
		}
	}
	if in.RateLimitPerMinute != nil && *in.RateLimitPerMinute < 1 {
		return toolgatetype.BudgetDefinition{}, errorf(at(path, "rateLimitPerMinute"), "must be at least 1: calls per minute shared by the members")
	}
	if in.Tools != nil {
		toolsPath := at(path, "tools")
		b.Tools = make(map[string]toolgatetype.BudgetToolLimits, len(in.Tools))
		for _, slug := range slices.Sorted(maps.Keys(in.Tools)) {
			t := in.Tools[slug]
			if t == nil {
				continue
			}
			if err := p.knownOrMCPTool(toolsPath, slug); err != nil {
				return toolgatetype.BudgetDefinition{}, err
			}
			b.Tools[slug] = toolgatetype.BudgetToolLimits{Allowed: t.Allowed,
				DailyLimitUSD: t.DailyLimitUSD.decimalPtr(), WeeklyLimitUSD: t.WeeklyLimitUSD.decimalPtr(), MonthlyLimitUSD: t.MonthlyLimitUSD.decimalPtr()}
		}
	}
	if in.Alerts != nil {
		b.Alerts = make([]float64, len(in.Alerts))
		for i, f := range in.Alerts {
			b.Alerts[i] = float64(f)
		}
	}
	if b.ID == "" {
		return toolgatetype.BudgetDefinition{}, errorf(at(path, "id"), `is required: a short name such as "search-team"`)
	}
	return b, nil
}

// claimValue is the string a budget's claim must equal or hold.
type claimValue string

func (c *claimValue) UnmarshalJSON(raw []byte) error {
	var s string
	if kindOf(raw) != "a string" || json.Unmarshal(raw, &s) != nil {
		return fmt.Errorf(`must be the string the claim equals or holds, such as "search", not %s`, kindOf(raw))
	}
	if s == "" {
		return errors.New("is empty: a token's claim is matched exactly, and no team is named by nothing")
	}
	*c = claimValue(s)
	return nil
}

// fraction is a fraction of a window's limit whose crossing sends an
// alert, in (0, 1]. It is read from its text, so that one no float can
// hold is refused by what the operator wrote.
type fraction float64

func (f *fraction) UnmarshalJSON(raw []byte) error {
	if kindOf(raw) != "a number" {
		return fmt.Errorf("must be a fraction of the limit such as 0.8, not %s", kindOf(raw))
	}
	text := strings.TrimSpace(string(raw))
	d, err := decimal.NewFromString(text)
	if len(text) > 32 || err != nil || !d.IsPositive() || d.GreaterThan(decimal.NewFromInt(1)) {
		return fmt.Errorf("%.32s is not a fraction from above 0 to 1 (0.8 alerts at 80%% of the limit)", text)
	}
	*f = fraction(d.InexactFloat64())
	return nil
}

// checkBudgets checks the budgets against the rest of the file, once it is
// all read, and then as the gateway will: every member is a configured
// principal (any id is, with the "*" template: token subjects are not
// known in advance), every approver a configured approver, claims come
// with an "oauth" section, and the tree holds together. The gateway's
// error already names the field ("budgets[1].parent: ..."); it is made a
// ConfigError here, so that the server stops with one line and exit 2 as
// for any other mistake in the file.
func checkBudgets(cfg *Config) error {
	principals := map[string]bool{}
	for _, pr := range cfg.Principals {
		principals[pr.ID] = true
	}
	anyPrincipal := cfg.template() != nil
	approvers := map[string]bool{}
	for _, a := range cfg.Approvers {
		approvers[a.ID] = true
	}
	for i, b := range cfg.Budgets {
		at := fmt.Sprintf("budgets[%d]", i)
		for j, m := range b.Members {
			switch {
			case m == PrincipalTemplate:
				return &ConfigError{Path: fmt.Sprintf("%s.members[%d]", at, j),
					Msg: `"*" is the template for token subjects, not a member: name principals, or use claims for the people of an identity provider`}
			case !principals[m] && !anyPrincipal:
				return &ConfigError{Path: fmt.Sprintf("%s.members[%d]", at, j), Msg: fmt.Sprintf("no principal %q is configured", m)}
			}
		}
		for j, a := range b.Approvers {
			if !approvers[a] {
				return &ConfigError{Path: fmt.Sprintf("%s.approvers[%d]", at, j), Msg: fmt.Sprintf("no approver %q is configured", a)}
			}
		}
		if len(b.Claims) > 0 && cfg.OAuth == nil {
			return &ConfigError{Path: at + ".claims", Msg: `claims match access tokens, which need an "oauth" section; API keys join a budget by members`}
		}
	}
	if len(cfg.Budgets) == 0 {
		return nil
	}
	if _, err := budgets.New(cfg.Budgets); err != nil {
		return budgetsError(err)
	}
	return nil
}

// budgetsError makes the gateway's "budgets[1].parent: reason" a
// ConfigError of that path.
func budgetsError(err error) error {
	var ce *ConfigError
	if errors.As(err, &ce) {
		return ce
	}
	msg := err.Error()
	if path, reason, ok := strings.Cut(msg, ": "); ok && strings.HasPrefix(path, "budgets") && !strings.Contains(path, " ") {
		return &ConfigError{Path: path, Msg: reason}
	}
	return &ConfigError{Path: "budgets", Msg: msg}
}
