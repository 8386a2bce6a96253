package postgres_test

import (
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetest"
)

// An operator sees how much of the database's work concurrent calls share:
// toolgate_store_batch_size counts, by operation, every batch the store
// sent and how many calls it held, so its sum is the calls and its count
// the round trips they took.
func TestGatewayExportsStoreBatchSizes(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	s := newStore(t)
	c := newCluster(t, []storage.Store{s}, toolgatetest.NewUpstream(), &toolgate.Config{Metrics: reg})
	ctx := t.Context()

	const n = 64
	goAll(n, func(i int) {
		principal := fmt.Sprintf("p%d", i%16)
		q := c.quote(t, 0, principal)
		_, err := c.gws[0].Call(ctx, principal, echoCall(q, fmt.Sprintf("k%d", i)))
		assert.NoError(t, err)
	})

	families, err := reg.Gather()
	require.NoError(t, err)
	got := map[string][2]uint64{} // operation: batches, calls
	for _, f := range families {
		if f.GetName() != "toolgate_store_batch_size" {
			continue
		}
		for _, m := range f.GetMetric() {
			op := m.GetLabel()[0].GetValue()
			got[op] = [2]uint64{m.GetHistogram().GetSampleCount(), uint64(m.GetHistogram().GetSampleSum())}
		}
	}
	require.Contains(t, got, "admit", "the histogram is exported")
	for _, op := range []string{"admit", "finish"} {
		assert.EqualValues(t, n, got[op][1], "%s: every call is counted in one batch", op)
		assert.LessOrEqual(t, got[op][0], got[op][1])
	}
	t.Logf("admissions: %d calls in %d batches; finishes: %d in %d", got["admit"][1], got["admit"][0], got["finish"][1], got["finish"][0])
}
