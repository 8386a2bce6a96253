package memory

import (
	"context"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// PutSpendControls implements storage.Store.
func (s *Store) PutSpendControls(ctx context.Context, principal string, c toolgatetype.SpendControls) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c = cloneControls(c) // the caller keeps its pointers and map
	s.mu.Lock()
	defer s.mu.Unlock()
	s.controls[principal] = c
	return nil
}

// GetSpendControls implements storage.Store.
func (s *Store) GetSpendControls(ctx context.Context, principal string) (toolgatetype.SpendControls, error) {
	if err := ctx.Err(); err != nil {
		return toolgatetype.SpendControls{}, err
	}
	s.mu.Lock()
	c, ok := s.controls[principal]
	s.mu.Unlock()
	if !ok {
		return toolgatetype.SpendControls{}, storage.ErrNotFound
	}
	// Stored controls are replaced, never edited, so cloning outside the
	// lock is safe.
	return cloneControls(c), nil
}

// UpdateSpendControls implements storage.Store. update runs under the
// store's lock, once.
func (s *Store) UpdateSpendControls(ctx context.Context, principal string, update func(*toolgatetype.SpendControls) error) (toolgatetype.SpendControls, error) {
	if err := ctx.Err(); err != nil {
		return toolgatetype.SpendControls{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	next := cloneControls(s.controls[principal]) // update may keep no reference into the store
	if err := update(&next); err != nil {
		return toolgatetype.SpendControls{}, err
	}
	next = cloneControls(next) // nor may it change what was stored afterwards
	s.controls[principal] = next
	return cloneControls(next), nil
}

// cloneControls deep-copies c so that no pointer or map is shared.
func cloneControls(c toolgatetype.SpendControls) toolgatetype.SpendControls {
	out := toolgatetype.SpendControls{
		MaxPerCallUSD:      clonePtr(c.MaxPerCallUSD),
		DailyLimitUSD:      clonePtr(c.DailyLimitUSD),
		MonthlyLimitUSD:    clonePtr(c.MonthlyLimitUSD),
		RateLimitPerMinute: clonePtr(c.RateLimitPerMinute),
		RateLimitPerHour:   clonePtr(c.RateLimitPerHour),
	}
	if c.Tools != nil {
		out.Tools = make(map[string]toolgatetype.ToolSpendControls, len(c.Tools))
		for slug, t := range c.Tools {
			out.Tools[slug] = toolgatetype.ToolSpendControls{
				Allowed:            clonePtr(t.Allowed),
				MaxPerCallUSD:      clonePtr(t.MaxPerCallUSD),
				DailyLimitUSD:      clonePtr(t.DailyLimitUSD),
				MonthlyLimitUSD:    clonePtr(t.MonthlyLimitUSD),
				RateLimitPerMinute: clonePtr(t.RateLimitPerMinute),
				RateLimitPerHour:   clonePtr(t.RateLimitPerHour),
			}
		}
	}
	return out
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
