package toolgate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/toolgate/toolgate/internal/budgets"
	"github.com/toolgate/toolgate/internal/spendlimits"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// limitsFor layers a principal's limits: the defaults, the
// operator's controls, then the caller's own (own; nil when none), which
// only ever tighten: they are a caller's self-restraint, not a way past the
// operator's ceiling.
func (g *Gateway) limitsFor(ctx context.Context, principal, slug string, own *toolgatetype.SpendControls) (spendlimits.Limits, error) {
	l := spendlimits.Defaults()
	if g.controls != nil {
		op, err := g.controls.SpendControls(ctx, principal)
		if err != nil {
			return l, internalError(fmt.Errorf("operator spend controls: %w", err))
		}
		l.Apply(op, slug, false)
	}
	if own != nil {
		l.Apply(*own, slug, true)
	}
	return l, nil
}

// SpendControls returns the caller's own stored spend controls, the zero
// value when they have set none. These only ever tighten the operator's:
// the limits in force for a tool are shown in its quote's controls.
func (g *Gateway) SpendControls(ctx context.Context, principal string) (toolgatetype.SpendControls, error) {
	if err := validPrincipal(principal); err != nil {
		return toolgatetype.SpendControls{}, err
	}
	c, err := g.store.GetSpendControls(ctx, principal)
	if errors.Is(err, storage.ErrNotFound) {
		return toolgatetype.SpendControls{}, nil
	}
	if err != nil {
		return toolgatetype.SpendControls{}, internalError(err)
	}
	return c, nil
}

// SetSpendControls replaces the caller's own spend controls. They apply to
// the caller's next quote and call, and can only tighten the operator's
// limits.
func (g *Gateway) SetSpendControls(ctx context.Context, principal string, c toolgatetype.SpendControls) error {
	_, err := g.UpdateSpendControls(ctx, principal, func(stored *toolgatetype.SpendControls) error {
		*stored = c
		return nil
	})
	return err
}

// UpdateSpendControls changes the caller's own spend controls in one atomic
// step of the store: update is handed the stored controls (the zero value
// when none) and what it leaves is validated and stored, so two concurrent
// changes, such as two tools' limits set at once, both survive. update may
// run more than once and must only change its argument; an error it returns
// aborts the change and comes back as it is. It returns the controls stored.
func (g *Gateway) UpdateSpendControls(ctx context.Context, principal string, update func(*toolgatetype.SpendControls) error) (toolgatetype.SpendControls, error) {
	if err := validPrincipal(principal); err != nil {
		return toolgatetype.SpendControls{}, err
	}
	var refused error // update's own error, or the validation's, returned as it is
	c, err := g.store.UpdateSpendControls(ctx, principal, func(c *toolgatetype.SpendControls) error {
		refused = update(c)
		if refused == nil {
			if bad := spendlimits.Validate(*c); bad != nil {
				refused = bad
			}
		}
		return refused
	})
	switch {
	case err != nil && refused != nil && errors.Is(err, refused):
		return toolgatetype.SpendControls{}, refused
	case err != nil:
		return toolgatetype.SpendControls{}, internalError(err)
	}
	return c, nil
}

// callBudgets are the budgets a caller counts in, nearest first: those
// naming the principal and those the claims of the access token in ctx
// join (WithTokenClaims), with their ancestors. Nil, at no cost, when the
// gateway has no budgets.
func (g *Gateway) callBudgets(ctx context.Context, principal string) []*budgets.Node {
	if g.budgets == nil {
		return nil
	}
	return g.budgets.For(principal, tokenClaims(ctx))
}

// budgetAlerts are the budget alerts a charge in charged may cause
// (spendlimits.Alerts); nil when the gateway writes no events.
func (g *Gateway) budgetAlerts(charged []storage.BudgetDay, now time.Time) []storage.BudgetAlert {
	if g.events == nil || g.budgets == nil {
		return nil
	}
	return spendlimits.Alerts(g.budgets, charged, now, g.log)
}

// refusalEventTimeout bounds the writing of a refusal's events, which the
// refused caller waits for.
const refusalEventTimeout = 5 * time.Second

// budgetRefused writes the events of a call refused by a budget's window
// (spendlimits.RefusalEvents). Writing them never fails the refusal: an
// error is logged.
func (g *Gateway) budgetRefused(ctx context.Context, r *toolgatetype.BudgetRefusal, now time.Time) {
	if g.events == nil || g.budgets == nil {
		return
	}
	evs, errs := spendlimits.RefusalEvents(g.budgets, r, now)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), refusalEventTimeout)
	defer cancel()
	for _, err := range errs {
		g.log.WarnContext(ctx, "budget events: cannot write a refusal's event", "budget", r.ID, "window", string(r.Window), "error", err)
	}
	for _, ev := range evs {
		added, err := g.store.AddEvent(ctx, ev)
		if err == nil && added {
			g.events.Wake()
		}
		if err != nil {
			g.log.WarnContext(ctx, "budget events: cannot write a refusal's event", "budget", r.ID, "window", string(r.Window), "error", err)
		}
	}
}
