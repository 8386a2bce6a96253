-- An admitted call's reservation is folded into its execution row (issue
-- 32, after the idempotency record in migration 0014): a quote+call pair
-- no longer inserts a spend_ledger row at admission nor updates it at the
-- finish. The reservation's state is read from the execution: 'reserved'
-- while its status is 'running' or 'ambiguous', 'charged' when charged,
-- 'released' otherwise. The day and minute rollups (spend_daily,
-- spend_minute) stay what they were, the history limits count; the
-- admission adds to them, a finish or resolution that releases takes the
-- amount out again, in the statements that write the execution.
--
-- spend_ledger becomes the archive of that history once executions are
-- pruned: Prune moves each execution that still counts into it, in the
-- statement that deletes the execution. Limits read the executions that
-- count and the archive. An execution counts (counted, below) until Prune
-- takes its call out of the rollups with the rest of old history, which it
-- does without deleting the execution: it only clears counted.
--
-- NO ROLLING UPGRADE ACROSS THIS MIGRATION. Instances of an earlier version
-- reserve by inserting a ledger row per admission, which limits would now
-- count beside the execution; they release by updating a ledger row that
-- is no longer there, and prune executions without archiving them. Stop
-- them all before the first instance of this version starts. Any that keep
-- running fail every admission, finish, resolution and execution prune
-- with an error naming this migration (the triggers at the end), so none
-- counts a call twice or loses one from the rollups; a call such an
-- instance admitted before the migration and finishes after it is answered
-- with an error and stays running until its lease ends, when a retry of its
-- key takes it over on an instance of this version.
--
-- Every write to both tables waits here until the migration commits, so no
-- reservation falls between the fold and the triggers.
LOCK TABLE spend_ledger, executions IN ACCESS EXCLUSIVE MODE;

-- A constant default: the column is added without rewriting the table.
ALTER TABLE executions ADD COLUMN IF NOT EXISTS counted boolean NOT NULL DEFAULT true;

-- An execution without a ledger row had its reservation pruned with old
-- history (a ledger kept for less time than executions): the rollups no
-- longer count it, so neither may the limits' raw reads.
UPDATE executions e SET counted = false
WHERE NOT EXISTS (SELECT FROM spend_ledger l WHERE l.execution_id = e.id);

-- Each ledger row whose execution still exists is that execution's
-- reservation, now read from the execution, which counts it (counted is
-- true). Both were written by one statement at admission and updated by
-- one at the finish or resolution, so amount, time, tool and state agree.
-- The rollups already count the call once, through the row: it leaves the
-- ledger without passing through the delete trigger, which would take it
-- out. The trigger is disabled for this one statement only, inside this
-- transaction, which holds the table exclusively: no other session ever
-- sees it disabled. Ledger rows whose execution is gone stay, as archive.
ALTER TABLE spend_ledger DISABLE TRIGGER spend_rollups_delete;
DELETE FROM spend_ledger l USING executions e WHERE l.execution_id = e.id;
ALTER TABLE spend_ledger ENABLE TRIGGER spend_rollups_delete;

-- What refuses an earlier version's writes. Each trigger lets through a
-- transaction that set toolgate.ledger_archive to 'on', which only Prune
-- of this version does (and an operator who means to write the archive by
-- hand may); a setting made for a transaction ends with it.
--
--   - spend_ledger_archive_only, before each inserted row: an earlier
--     version's admission, which would count its call twice. An insert
--     let through still passes the rollup insert trigger, so a row written
--     by hand is counted; Prune's archived rows are counted already and
--     also set toolgate.admission_rollups (migration 0010).
--   - spend_ledger_archive_updates, before each UPDATE statement, whatever
--     rows it matches: an earlier version's finish or resolution, whose
--     ledger update now matches nothing and would leave a released amount
--     counted. A statement trigger fires even when no row matches, and the
--     statement's failure undoes its execution's update too. This version
--     never updates the ledger.
--   - executions_archive_on_delete, before each DELETE statement on
--     executions: an earlier version's Prune, which would delete executions
--     that count without archiving them, and leave them in the rollups for
--     good.
--
-- None of them fires on this version's hot path.
CREATE OR REPLACE FUNCTION refuse_earlier_version() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    RAISE EXCEPTION '% on % refused: since migration 0015 spend_ledger is only the archive Prune writes, and a reservation lives on its execution; stop gateways of earlier versions', TG_OP, TG_TABLE_NAME
        USING ERRCODE = 'read_only_sql_transaction';
END
$$;

DROP TRIGGER IF EXISTS spend_ledger_archive_only ON spend_ledger;
CREATE TRIGGER spend_ledger_archive_only
    BEFORE INSERT ON spend_ledger
    FOR EACH ROW
    WHEN (current_setting('toolgate.ledger_archive', true) IS DISTINCT FROM 'on')
    EXECUTE FUNCTION refuse_earlier_version();

DROP TRIGGER IF EXISTS spend_ledger_archive_updates ON spend_ledger;
CREATE TRIGGER spend_ledger_archive_updates
    BEFORE UPDATE ON spend_ledger
    FOR EACH STATEMENT
    WHEN (current_setting('toolgate.ledger_archive', true) IS DISTINCT FROM 'on')
    EXECUTE FUNCTION refuse_earlier_version();

DROP TRIGGER IF EXISTS executions_archive_on_delete ON executions;
CREATE TRIGGER executions_archive_on_delete
    BEFORE DELETE ON executions
    FOR EACH STATEMENT
    WHEN (current_setting('toolgate.ledger_archive', true) IS DISTINCT FROM 'on')
    EXECUTE FUNCTION refuse_earlier_version();
