-- Ambiguous executions (nobody knows whether the provider ran the request)
-- and a person's resolution of them.
--
-- An ambiguous execution is finished, but its ledger row stays 'reserved':
-- the rollups and the limits count it as they count a running one's, until
-- it is resolved, completed charging it and failed releasing it (the
-- rollup trigger takes the amount out). The ledger needs no change for
-- that; the executions table needs the new status and the resolution.
--
-- During a rolling upgrade, processes of the earlier version neither write
-- nor resolve ambiguous executions, but their Prune treats one as any
-- finished execution and deletes it once it is older than the idempotency
-- cutoff (a day by default), resolved or not: a fleet that is upgraded
-- within that time loses none.
--
-- The status check is replaced by a wider one, in one statement. Checking
-- the existing rows scans the table under its lock, which holds a day of
-- executions (Prune) and so is quick.
ALTER TABLE executions
    DROP CONSTRAINT IF EXISTS executions_status_check,
    ADD CONSTRAINT executions_status_check CHECK (status IN ('running', 'completed', 'failed', 'ambiguous'));

-- How a person resolved an ambiguous execution; NULL for every other. No
-- index names them, so a finish stays a heap-only update.
ALTER TABLE executions
    ADD COLUMN IF NOT EXISTS resolution_outcome text
        CONSTRAINT executions_resolution_outcome_check CHECK (resolution_outcome IN ('completed', 'failed')),
    ADD COLUMN IF NOT EXISTS resolved_by        text,
    ADD COLUMN IF NOT EXISTS resolved_at        timestamptz,
    ADD COLUMN IF NOT EXISTS resolution_note    text;
