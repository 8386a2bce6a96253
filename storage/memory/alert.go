package memory

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/toolgate/toolgate/storage"
)

// alertLedger is what storage.AlertLedger keeps: each claimed id and when,
// in claim order so that Prune forgets the oldest without a scan.
type alertLedger struct {
	mu      sync.Mutex
	claimed map[string]struct{}
	queue   timeQueue[string]
}

// ClaimAlert implements storage.AlertLedger.
func (s *Store) ClaimAlert(ctx context.Context, id string, now time.Time) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	switch {
	case id == "":
		return false, errors.New("memory: an alert id is empty")
	case len(id) > storage.MaxAlertIDLength:
		return false, fmt.Errorf("memory: an alert id is %d bytes, over %d", len(id), storage.MaxAlertIDLength)
	}
	a := &s.alerts
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.claimed[id]; ok {
		return false, nil
	}
	if a.claimed == nil {
		a.claimed = make(map[string]struct{})
	}
	a.claimed[id] = struct{}{}
	a.queue.push(now, id)
	return true, nil
}

// prune forgets claims made before before, at most limit of them:
// their periods have ended, so nobody claims them again.
func (a *alertLedger) prune(before time.Time, limit int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.queue.drain(before, limit, func(id string) verdict {
		delete(a.claimed, id)
		return drop
	})
}
