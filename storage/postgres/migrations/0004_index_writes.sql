-- Fewer index writes on the hot path.
--
-- FinishExecution sets finished on the idempotency record. The two indexes
-- Prune used had finished in their predicates, and a column an index depends
-- on blocks heap-only (HOT) updates: every finish wrote a new row version
-- and new entries in every index of the table. One index on the earlier of
-- the two instants Prune compares serves both of its conditions (a finished
-- record's created_at, a running one's lease_until, each before the cutoff,
-- put that earlier instant before it too), and finishing a record now
-- rewrites no index. The fill factor leaves room on each page for that
-- in-place update.
CREATE INDEX IF NOT EXISTS idempotency_prune_idx ON idempotency_records (LEAST(created_at, lease_until));
DROP INDEX IF EXISTS idempotency_finished_created_idx;
DROP INDEX IF EXISTS idempotency_running_lease_idx;
ALTER TABLE idempotency_records SET (fillfactor = 90);

-- Limits on one tool were measured through (principal, tool_id,
-- created_at). They now read whole days from spend_daily and raw rows only
-- for less than a day, through (principal, created_at) with the tool as a
-- filter, so every admission was writing an entry nobody read.
DROP INDEX IF EXISTS spend_ledger_principal_tool_idx;
