package toolgate_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/storage/memory"
	"github.com/toolgate/toolgate/webhook"
)

// A gateway closed while its receiver hangs gives up at Close's deadline,
// and loses nothing: the event stays in the store, and the next gateway
// on it delivers it once the cut-short attempt's lease has lapsed.
func TestCloseLeavesWhatItCouldNotDeliverForTheNext(t *testing.T) {
	t.Parallel()
	hooks := newHookReceiver(t)
	release, entered := make(chan struct{}), make(chan struct{}, 10)
	hanging := newHangingReceiver(t, release, entered)
	stuck, err := webhook.New(hanging, hookSecret, nil)
	require.NoError(t, err)
	store := memory.New()
	team := searchTeam()
	team.Alerts = []float64{0.1}
	lease := func(c *toolgate.Config) { c.EventDelivery.Lease = 200 * time.Millisecond }
	e := newEnvWithStore(t, store, []toolSpec{pricedAt("1.0000")}, withBudgets(stuck, team), lease)

	e.charge("alice", "1.0000")
	<-entered // the alert's delivery hangs at the receiver
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	require.ErrorIs(t, e.gw.Close(ctx), context.DeadlineExceeded, "the attempt was still hanging")
	assert.Less(t, time.Since(start), 5*time.Second)
	close(release)
	require.NoError(t, e.gw.Close(context.Background()), "twice is fine")

	st, err := store.EventStats(t.Context())
	require.NoError(t, err)
	assert.Equal(t, int64(1), st.Pending, "the alert waits in the store")

	next := newEnvWithStore(t, store, []toolSpec{pricedAt("1.0000")}, withBudgets(hooks.sender(t), team), lease)
	next.clock.Advance(time.Second) // past the cut-short attempt's lease
	got := hooks.await(t, 1)
	assert.Equal(t, threshold(0.1, "1.0000", t0.In(berlin)), got[0].Data)
	next.gw.WaitBudgetAlerts()
}

// A gateway that writes no events has nothing to wait for, and Close may
// be called again.
func TestCloseWithoutEvents(t *testing.T) {
	t.Parallel()
	e := newEnvWithStore(t, memory.New(), []toolSpec{pricedAt("1.0000")})
	require.NoError(t, e.gw.Close(context.Background()))
	require.NoError(t, e.gw.Close(context.Background()))
}

// newHangingReceiver is a webhook endpoint that tells entered of each
// request and answers nothing until release is closed; its URL.
func newHangingReceiver(t *testing.T, release, entered chan struct{}) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}
