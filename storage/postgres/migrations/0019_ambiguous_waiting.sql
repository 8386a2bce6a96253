-- The ambiguous executions that wait for a person, counted at every
-- metrics scrape (storage.AmbiguousCounter) by every instance.
--
-- A partial index on executions WHERE status = 'ambiguous' would answer
-- the count, but an index that names status, in its columns or its
-- condition, makes every finish (which sets status) write a new entry in
-- each of the table's indexes instead of rewriting its row in place (a
-- heap-only update; see migrations 0009 and 0014). So the waiting
-- executions are kept in a table of their own, which only they are in,
-- by triggers on executions: a row goes in when an execution's status
-- becomes 'ambiguous' and out when it leaves it (a resolution) or the
-- execution is deleted. Each trigger's WHEN stops every other write
-- before any statement runs: a finish as completed or failed, the usual
-- one, only evaluates it, and writes nothing more.
--
-- The triggers fire for whoever writes the executions, so instances of an
-- earlier version running beside this one keep the table exact too.
CREATE TABLE IF NOT EXISTS ambiguous_waiting (
    execution_id uuid        PRIMARY KEY,
    created_at   timestamptz NOT NULL
);

-- The body names the tables with the schema, written in when this
-- migration runs, and carries no SET clause, as migration 0009 explains.
DO $migration$
BEGIN
EXECUTE format($function$
CREATE OR REPLACE FUNCTION %1$I.ambiguous_waiting_apply() RETURNS trigger
LANGUAGE plpgsql
AS $body$
BEGIN
    IF TG_OP = 'UPDATE' AND NEW.status = 'ambiguous' THEN
        INSERT INTO %1$I.ambiguous_waiting (execution_id, created_at) VALUES (NEW.id, NEW.created_at)
        ON CONFLICT (execution_id) DO NOTHING;
    ELSE
        DELETE FROM %1$I.ambiguous_waiting WHERE execution_id = OLD.id;
    END IF;
    RETURN NULL;
END
$body$
$function$, current_schema());
END
$migration$;

-- Creating the triggers locks executions against writes until the
-- migration commits, so no execution changes between them and the copy
-- of those already waiting below. The copy reads the whole table, which
-- holds a day of executions (Prune) and the unresolved ones, once.
DROP TRIGGER IF EXISTS ambiguous_waiting_update ON executions;
CREATE TRIGGER ambiguous_waiting_update
    AFTER UPDATE OF status ON executions
    FOR EACH ROW
    WHEN ((OLD.status = 'ambiguous') <> (NEW.status = 'ambiguous'))
    EXECUTE FUNCTION ambiguous_waiting_apply();

DROP TRIGGER IF EXISTS ambiguous_waiting_delete ON executions;
CREATE TRIGGER ambiguous_waiting_delete
    AFTER DELETE ON executions
    FOR EACH ROW
    WHEN (OLD.status = 'ambiguous')
    EXECUTE FUNCTION ambiguous_waiting_apply();

INSERT INTO ambiguous_waiting (execution_id, created_at)
SELECT id, created_at FROM executions WHERE status = 'ambiguous'
ON CONFLICT (execution_id) DO NOTHING;
