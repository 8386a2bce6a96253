package toolgate

import (
	"context"
	"time"
)

// WaitBudgetAlerts returns once the store holds no pending event, so that
// a test sees every event its calls caused delivered (or given up, with a
// deadline that keeps a broken deliverer from hanging the test).
func (g *Gateway) WaitBudgetAlerts() {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		st, err := g.store.EventStats(context.Background())
		if err == nil && st.Pending == 0 {
			return
		}
		if g.events != nil {
			g.events.Wake()
		}
		time.Sleep(2 * time.Millisecond)
	}
}
