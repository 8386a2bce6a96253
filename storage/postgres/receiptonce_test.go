package postgres_test

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
)

// TestReceiptStoredOnceInItsRow: a sealed finish and a sealed resolution
// store the response as given, without the receipt, which its receipts
// row keeps; every read of the execution or its key gives the response
// with the receipt joined in, on the instance that wrote it and another.
func TestReceiptStoredOnceInItsRow(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	schema := newSchema(t)
	s, other := openInstance(t, schema), openInstance(t, schema)
	executions := pgx.Identifier{schema, "executions"}.Sanitize()
	stored := func(b storage.Begin) string {
		t.Helper()
		var resp []byte
		require.NoError(t, sharedPool(t).QueryRow(ctx, `SELECT response FROM `+executions+` WHERE id = $1`, b.ExecutionID).Scan(&resp))
		return string(resp)
	}

	done := admitOn(t, s, "alice", "k-done")
	f := sealedTestFinish(done, storage.ExecutionCompleted, t0, nil)
	require.NoError(t, s.FinishExecution(ctx, f))
	assert.Equal(t, string(f.Response), stored(done), "the response is stored without its receipt")

	amb := admitOn(t, s, "alice", "k-amb")
	require.NoError(t, s.FinishExecution(ctx, sealedTestFinish(amb, storage.ExecutionAmbiguous, t0, nil)))
	r := storage.Resolve{ExecutionID: amb.ExecutionID, Outcome: storage.ExecutionCompleted, ResolvedBy: "approver",
		Now: t0.Add(time.Hour), Response: []byte(`{"resolved":true}`)}
	r.Seal = sealedTestFinish(amb, storage.ExecutionCompleted, t0, nil).Seal
	resolved, err := s.ResolveExecution(ctx, r)
	require.NoError(t, err)
	assert.Equal(t, `{"resolved":true}`, stored(amb), "the resolved response is stored without its receipt")

	chain, err := other.ListReceipts(ctx, "alice", 0, 10)
	require.NoError(t, err)
	require.Len(t, chain, 3)
	wantDone := string(f.Response[:len(f.Response)-1]) + `,"receipt":` + string(chain[0].Signed) + `}`
	wantAmb := `{"resolved":true,"receipt":` + string(chain[2].Signed) + `}`
	assert.Equal(t, wantAmb, string(resolved.Response))
	for _, st := range []storage.Store{s, other} {
		for _, c := range []struct {
			b    storage.Begin
			want string
		}{{done, wantDone}, {amb, wantAmb}} {
			e, err := st.GetExecution(ctx, c.b.ExecutionID)
			require.NoError(t, err)
			assert.Equal(t, c.want, string(e.Response))
			rec, err := st.GetIdempotency(ctx, "alice", c.b.Key)
			require.NoError(t, err)
			assert.Equal(t, c.want, string(rec.Response))
		}
	}
}
