package postgres_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
)

// A large response is stored compressed with lz4 on a server that has it
// (migration 0023), and read back whole.
func TestLargeResponseStoredWithLZ4(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := sharedPool(t)
	conn, err := pool.Acquire(ctx)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `SET default_toast_compression = lz4`)
	conn.Release()
	if err != nil {
		t.Skipf("this server has no lz4: %v", err)
	}
	schema := newSchema(t)
	s := openInstance(t, schema)

	b := admitOn(t, s, "kate", "large")
	f := testFinish(b, storage.ExecutionCompleted, t0)
	f.Response = []byte(`{"features":"` + strings.Repeat("quake near the coast, magnitude 4.2; ", 400) + `"}`)
	require.NoError(t, s.FinishExecution(ctx, f))

	var method string
	require.NoError(t, pool.QueryRow(ctx, fmtSchema(`SELECT pg_column_compression(response) FROM {schema}.executions WHERE id = $1`, schema),
		b.ExecutionID[:]).Scan(&method))
	assert.Equal(t, "lz4", method)
	rec, err := s.GetIdempotency(ctx, "kate", "large")
	require.NoError(t, err)
	assert.Contains(t, string(rec.Response), "magnitude 4.2", "read back whole")
	assert.Len(t, rec.Response, len(f.Response))
}
