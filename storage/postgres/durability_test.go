package postgres_test

import (
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/storage/postgres"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"
)

// TestCommitsWaitForTheDiskWhereACallerIsTold shows, from inside the
// database, which of a pair's commits wait for their WAL to reach disk:
// triggers record the synchronous_commit in force when the quote, the
// admission and the result write their rows. The result always waits (a
// caller is about to be told it, and its flush makes everything before it
// durable too); the quote never does; the admission waits only with
// Config.SynchronousAdmission.
func TestCommitsWaitForTheDiskWhereACallerIsTold(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := sharedPool(t)
	var session string
	require.NoError(t, pool.QueryRow(ctx, `SELECT current_setting('synchronous_commit')`).Scan(&session))
	if session == "off" {
		t.Skip("the server's sessions already commit without waiting: nothing to tell apart")
	}

	for _, tc := range []struct {
		name      string
		sync      bool
		admission string
	}{
		{"default", false, "off"},
		{"synchronous admission", true, session},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			schema := newSchema(t)
			store, err := postgres.New(ctx, pool, &postgres.Config{Schema: schema, SynchronousAdmission: tc.sync})
			require.NoError(t, err)
			_, err = pool.Exec(ctx, fmtSchema(`
				CREATE TABLE {schema}.commit_modes (seq serial, step text, setting text);
				CREATE FUNCTION {schema}.record_commit_mode() RETURNS trigger LANGUAGE plpgsql AS $$
				BEGIN
					INSERT INTO {schema}.commit_modes (step, setting)
					VALUES (TG_TABLE_NAME || ' ' || TG_OP, current_setting('synchronous_commit'));
					RETURN NULL;
				END $$;
				CREATE TRIGGER record_commit_mode AFTER INSERT OR UPDATE ON {schema}.quotes
					FOR EACH ROW EXECUTE FUNCTION {schema}.record_commit_mode();
				CREATE TRIGGER record_commit_mode AFTER INSERT OR UPDATE ON {schema}.executions
					FOR EACH ROW EXECUTE FUNCTION {schema}.record_commit_mode();`, schema))
			require.NoError(t, err)

			reg := registry.New()
			require.NoError(t, reg.Register(echoTool()))
			gw, err := toolgate.New(store, &toolgate.Config{Registry: reg, Transport: toolgatetest.NewUpstream()})
			require.NoError(t, err)
			q, err := gw.Quote(ctx, "alice", "echo")
			require.NoError(t, err)
			res, err := gw.Call(ctx, "alice", echoCall(q, "k1"))
			require.NoError(t, err)
			require.Equal(t, toolgatetype.StatusCompleted, res.Execution.Status)

			rows, err := pool.Query(ctx, fmtSchema(`SELECT step, setting FROM {schema}.commit_modes ORDER BY seq`, schema))
			require.NoError(t, err)
			got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[struct{ Step, Setting string }])
			require.NoError(t, err)
			assert.Equal(t, []struct{ Step, Setting string }{
				{"quotes INSERT", "off"},            // the quote
				{"quotes UPDATE", tc.admission},     // the admission uses it...
				{"executions INSERT", tc.admission}, // ...and records the execution
				{"executions UPDATE", session},      // the result
			}, got)
		})
	}
}
