-- An admitted call is one row: its reservation moves onto its execution,
-- as its Idempotency-Key's record did in 0008_one_row_per_call.sql. A call
-- inserted a spend_ledger row at admission and updated it at its finish,
-- two B-tree writes more per call (the ledger and its two indexes) than
-- the execution it duplicated. Conventions as in 0001_init.sql.
--
-- The reservation's state is read off the execution: 'reserved' while it
-- is running or ambiguous, 'charged' once charged, 'released' otherwise.
-- Its amount, principal, tool and creation are the execution's; its UTC
-- minute and day are computed from created_at as the ledger's were (a
-- floor division, so that an instant before 1970 falls in its own minute).
--
-- The rollups (spend_daily, spend_minute) stay what limits count, with the
-- same meaning: they count every call that is a counted execution or a
-- ledger row, and these two never overlap. counted is 1 while the
-- execution's call counts in the rollups; the ledger's prune sets it to 0
-- when the call leaves the history limits see (only ever from 1 to 0).
-- Triggers on executions keep the rollups exact as the ledger's did,
-- whoever writes: admitting a call adds it, releasing it takes its amount
-- out, uncounting it takes it out altogether. Admission's two upserts run
-- inside its one INSERT, where the ledger's insert ran them before: the
-- writer, which every call waits for, steps one statement fewer per call,
-- and one fewer again at the finish, which updated the ledger.
--
-- spend_ledger becomes the archive of calls whose executions were pruned
-- (after a day) while they still count (for a month): deleting a counted
-- execution inserts its row, already counted, so the ledger's insert
-- trigger goes. Its delete trigger stays (the ledger's prune takes archived
-- rows out of the rollups), and so does its update trigger, though nothing
-- updates an archived row.
--
-- No upgrade across this migration with a process of an earlier version
-- still open on the file: that process would insert a ledger row for each
-- call it admits, which the new reads would count a second time. A trigger
-- refuses such an insert, so the earlier process fails every new call with
-- an error naming this migration; a call it had begun is taken over by a
-- retry once its lease ends, and its finish of a call admitted before the
-- upgrade still moves the rollups right (the triggers on executions do).

ALTER TABLE executions ADD COLUMN counted INTEGER NOT NULL DEFAULT 1 CHECK (counted IN (0, 1));

-- Every ledger row whose execution still exists is that execution's
-- reservation (both were written by one admission, with the same amount,
-- tool and creation). An execution with none had its reservation pruned
-- from the ledger already: it no longer counts.
UPDATE executions SET counted = 0
WHERE NOT EXISTS (SELECT 1 FROM spend_ledger l WHERE l.execution_id = executions.id);

-- The reservations go; the rollups keep counting their calls, now through
-- their executions, so the delete trigger is out of the way meanwhile.
DROP TRIGGER spend_ledger_delete;
DELETE FROM spend_ledger WHERE execution_id IN (SELECT id FROM executions);
CREATE TRIGGER spend_ledger_delete AFTER DELETE ON spend_ledger
BEGIN
    UPDATE spend_daily
    SET calls = calls - 1, spend = spend - iif(OLD.state = 'released', 0, OLD.amount)
    WHERE principal = OLD.principal AND day = OLD.day AND tool_id = OLD.tool_id;
    DELETE FROM spend_daily
    WHERE principal = OLD.principal AND day = OLD.day AND tool_id = OLD.tool_id AND calls <= 0;
    UPDATE spend_minute
    SET calls = calls - 1, spend = spend - iif(OLD.state = 'released', 0, OLD.amount)
    WHERE principal = OLD.principal AND minute = OLD.minute AND tool_id = OLD.tool_id;
    DELETE FROM spend_minute
    WHERE principal = OLD.principal AND minute = OLD.minute AND tool_id = OLD.tool_id AND calls <= 0;
END;

-- An archived row is counted already, when its execution was admitted.
DROP TRIGGER spend_ledger_insert;

-- Only an archived execution's row may be inserted: its execution is gone
-- by then (executions_archive runs after the delete). An insert for an
-- execution that exists is a process from before this migration reserving
-- the way it used to.
CREATE TRIGGER spend_ledger_archive_only BEFORE INSERT ON spend_ledger
WHEN EXISTS (SELECT 1 FROM executions WHERE id = NEW.execution_id)
BEGIN
    SELECT RAISE(ABORT, 'spend_ledger holds only pruned executions since migration 0010_reservation_on_execution: a toolgate from before it still has this file open; stop it and use the new version');
END;

-- Admitting a call counts it, running and so reserved: one call and its
-- amount in its day's and its minute's rollup rows.
CREATE TRIGGER executions_count AFTER INSERT ON executions
WHEN NEW.counted = 1
BEGIN
    INSERT INTO spend_daily (principal, day, tool_id, calls, spend)
    VALUES (NEW.principal, NEW.created_at / 86400000000000 - (NEW.created_at % 86400000000000 < 0), NEW.tool_id, 1,
        iif(NEW.status IN ('running', 'ambiguous') OR NEW.charged = 1, NEW.amount, 0))
    ON CONFLICT (principal, day, tool_id) DO UPDATE
    SET calls = calls + 1, spend = spend + excluded.spend;
    INSERT INTO spend_minute (principal, minute, tool_id, calls, spend)
    VALUES (NEW.principal, NEW.created_at / 60000000000 - (NEW.created_at % 60000000000 < 0), NEW.tool_id, 1,
        iif(NEW.status IN ('running', 'ambiguous') OR NEW.charged = 1, NEW.amount, 0))
    ON CONFLICT (principal, minute, tool_id) DO UPDATE
    SET calls = calls + 1, spend = spend + excluded.spend;
END;

-- Charging a reservation (running to completed and charged) changes no
-- rollup, so the common finish runs no statement here; releasing one (a
-- finish not charged and not ambiguous, a resolution to failed) takes its
-- amount out. A rollup row already gone is left gone, and spend never goes
-- below zero.
CREATE TRIGGER executions_settle AFTER UPDATE OF status, charged ON executions
WHEN OLD.counted = 1 AND NEW.counted = 1
    AND (OLD.status IN ('running', 'ambiguous') OR OLD.charged = 1) <> (NEW.status IN ('running', 'ambiguous') OR NEW.charged = 1)
BEGIN
    UPDATE spend_daily
    SET spend = max(0, spend
        - iif(OLD.status IN ('running', 'ambiguous') OR OLD.charged = 1, OLD.amount, 0)
        + iif(NEW.status IN ('running', 'ambiguous') OR NEW.charged = 1, NEW.amount, 0))
    WHERE principal = NEW.principal AND day = NEW.created_at / 86400000000000 - (NEW.created_at % 86400000000000 < 0)
        AND tool_id = NEW.tool_id;
    UPDATE spend_minute
    SET spend = max(0, spend
        - iif(OLD.status IN ('running', 'ambiguous') OR OLD.charged = 1, OLD.amount, 0)
        + iif(NEW.status IN ('running', 'ambiguous') OR NEW.charged = 1, NEW.amount, 0))
    WHERE principal = NEW.principal AND minute = NEW.created_at / 60000000000 - (NEW.created_at % 60000000000 < 0)
        AND tool_id = NEW.tool_id;
END;

-- The ledger's prune uncounts an execution older than its cutoff: the call
-- leaves its rollups as a deleted ledger row does, and a rollup row that
-- counts no call any more goes.
CREATE TRIGGER executions_uncount AFTER UPDATE OF counted ON executions
WHEN OLD.counted = 1 AND NEW.counted = 0
BEGIN
    UPDATE spend_daily
    SET calls = calls - 1, spend = max(0, spend - iif(OLD.status IN ('running', 'ambiguous') OR OLD.charged = 1, OLD.amount, 0))
    WHERE principal = OLD.principal AND day = OLD.created_at / 86400000000000 - (OLD.created_at % 86400000000000 < 0)
        AND tool_id = OLD.tool_id;
    DELETE FROM spend_daily
    WHERE principal = OLD.principal AND day = OLD.created_at / 86400000000000 - (OLD.created_at % 86400000000000 < 0)
        AND tool_id = OLD.tool_id AND calls <= 0;
    UPDATE spend_minute
    SET calls = calls - 1, spend = max(0, spend - iif(OLD.status IN ('running', 'ambiguous') OR OLD.charged = 1, OLD.amount, 0))
    WHERE principal = OLD.principal AND minute = OLD.created_at / 60000000000 - (OLD.created_at % 60000000000 < 0)
        AND tool_id = OLD.tool_id;
    DELETE FROM spend_minute
    WHERE principal = OLD.principal AND minute = OLD.created_at / 60000000000 - (OLD.created_at % 60000000000 < 0)
        AND tool_id = OLD.tool_id AND calls <= 0;
END;

-- Pruning an execution that still counts archives it in the ledger, in the
-- same statement, with its reservation's state: a run abandoned by a dead
-- process stays 'reserved', since the upstream may well have been called
-- and billed. The rollups count it already and do not change. A trigger
-- rather than the prune's own statement, so that whoever deletes an
-- execution (an operator's sqlite3 shell too) leaves its call where the
-- ledger's prune will find it: a call gone from both tables would stay in
-- the rollups for good.
CREATE TRIGGER executions_archive AFTER DELETE ON executions
WHEN OLD.counted = 1
BEGIN
    INSERT INTO spend_ledger (execution_id, principal, tool_id, amount, state, created_at, minute, day)
    VALUES (OLD.id, OLD.principal, OLD.tool_id, OLD.amount,
        CASE WHEN OLD.status IN ('running', 'ambiguous') THEN 'reserved' WHEN OLD.charged = 1 THEN 'charged' ELSE 'released' END,
        OLD.created_at,
        OLD.created_at / 60000000000 - (OLD.created_at % 60000000000 < 0),
        OLD.created_at / 86400000000000 - (OLD.created_at % 86400000000000 < 0));
END;

-- Limits read a principal's counted executions by creation, between a
-- window's start and its nearest minute, on the listing's index
-- executions_principal_created (0005_ambiguous.sql): no index is added.
