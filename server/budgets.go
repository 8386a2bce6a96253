package server

import (
	"errors"
	"fmt"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/toolgate/toolgate/internal/budgets"
	"github.com/toolgate/toolgate/toolgatetype"
)

// budgetFields are the members of one entry of "budgets", as
// toolgatetype.BudgetDefinition spells them in JSON.
var budgetFields = []string{"id", "name", "parent", "members", "claims", "everyone", "dailyLimitUsd", "weeklyLimitUsd",
	"monthlyLimitUsd", "rateLimitPerMinute", "tools", "alerts", "timeZone", "approvers"}

// budgetWindowFields are the limits of a budget's window, for the budget
// as a whole and for each of its tools.
var budgetWindowFields = []string{"dailyLimitUsd", "weeklyLimitUsd", "monthlyLimitUsd"}

// budgets parses "budgets": each entry's shape and values here, where the
// path of every field is known; what concerns the tree as a whole (ids
// given twice, parents, cycles, a budget with no limit) is the gateway's
// own check, run by checkBudgets once the rest of the file is read.
func (p configParser) budgets(n node) ([]toolgatetype.BudgetDefinition, error) {
	items, err := n.items()
	if err != nil {
		return nil, err
	}
	out := make([]toolgatetype.BudgetDefinition, 0, len(items))
	for _, item := range items {
		b, err := p.budget(item)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

func (p configParser) budget(n node) (toolgatetype.BudgetDefinition, error) {
	fs, err := n.fields(budgetFields...)
	if err != nil {
		return toolgatetype.BudgetDefinition{}, err
	}
	var b toolgatetype.BudgetDefinition
	for _, f := range fs {
		switch f.name {
		case "id":
			b.ID, err = f.text()
		case "name":
			b.Name, err = f.text()
		case "parent":
			b.Parent, err = f.text()
		case "members":
			b.Members, err = f.texts()
		case "approvers":
			b.Approvers, err = f.texts()
		case "claims":
			b.Claims, err = budgetClaims(f.node)
		case "everyone":
			b.Everyone, err = f.boolean()
		case "dailyLimitUsd", "weeklyLimitUsd", "monthlyLimitUsd":
			err = setWindowLimit(f, &b.DailyLimitUSD, &b.WeeklyLimitUSD, &b.MonthlyLimitUSD)
		case "rateLimitPerMinute":
			var perMinute int
			if perMinute, err = f.count(); err == nil && perMinute < 1 {
				err = f.errorf("must be at least 1: calls per minute shared by the members")
			}
			b.RateLimitPerMinute = &perMinute
		case "tools":
			b.Tools, err = p.budgetTools(f.node)
		case "alerts":
			b.Alerts, err = budgetAlerts(f.node)
		case "timeZone":
			b.TimeZone, err = f.str() // checked by the gateway, which reads the zone
		}
		if err != nil {
			return toolgatetype.BudgetDefinition{}, err
		}
	}
	if b.ID == "" {
		return toolgatetype.BudgetDefinition{}, n.child("id").errorf(`is required: a short name such as "search-team"`)
	}
	return b, nil
}

// setWindowLimit parses f, one of budgetWindowFields, into the limit of
// its window.
func setWindowLimit(f field, daily, weekly, monthly **decimal.Decimal) error {
	d, err := f.amount()
	if err != nil {
		return err
	}
	switch f.name {
	case "dailyLimitUsd":
		*daily = &d
	case "weeklyLimitUsd":
		*weekly = &d
	case "monthlyLimitUsd":
		*monthly = &d
	}
	return nil
}

// budgetClaims parses a budget's claims: each a claim's name and the one
// string it must equal or hold.
func budgetClaims(n node) (map[string]string, error) {
	fs, err := n.members()
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(fs))
	for _, f := range fs {
		if f.name == "" {
			return nil, n.errorf("a claim's name is empty")
		}
		v, err := f.str()
		if err != nil {
			return nil, f.errorf(`must be the string the claim equals or holds, such as "search", not %s`, f.kind())
		}
		if v == "" {
			return nil, f.errorf("is empty: a token's claim is matched exactly, and no team is named by nothing")
		}
		out[f.name] = v
	}
	return out, nil
}

func (p configParser) budgetTools(n node) (map[string]toolgatetype.BudgetToolLimits, error) {
	tools, err := n.members()
	if err != nil {
		return nil, err
	}
	out := make(map[string]toolgatetype.BudgetToolLimits, len(tools))
	for _, t := range tools {
		if err := p.knownOrMCPTool(n, t.name); err != nil {
			return nil, err
		}
		fs, err := t.fields(append([]string{"allowed"}, budgetWindowFields...)...)
		if err != nil {
			return nil, err
		}
		var l toolgatetype.BudgetToolLimits
		for _, f := range fs {
			if f.name == "allowed" {
				var allowed bool
				allowed, err = f.boolean()
				l.Allowed = &allowed
			} else {
				err = setWindowLimit(f, &l.DailyLimitUSD, &l.WeeklyLimitUSD, &l.MonthlyLimitUSD)
			}
			if err != nil {
				return nil, err
			}
		}
		out[t.name] = l
	}
	return out, nil
}

// budgetAlerts parses the fractions of a window's limit whose crossing
// sends an alert, each in (0, 1]. A fraction is read from its text, so
// that one no float can hold is refused by what the operator wrote.
func budgetAlerts(n node) ([]float64, error) {
	items, err := n.items()
	if err != nil {
		return nil, err
	}
	out := make([]float64, 0, len(items))
	for _, item := range items {
		if item.kind() != "a number" {
			return nil, item.errorf("must be a fraction of the limit such as 0.8, not %s", item.kind())
		}
		text := strings.TrimSpace(string(item.raw))
		d, err := decimal.NewFromString(text)
		if len(text) > 32 || err != nil || !d.IsPositive() || d.GreaterThan(decimal.NewFromInt(1)) {
			return nil, item.errorf("%.32s is not a fraction from above 0 to 1 (0.8 alerts at 80%% of the limit)", text)
		}
		out = append(out, d.InexactFloat64())
	}
	return out, nil
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
