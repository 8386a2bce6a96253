-- Minute rollups of the spend ledger, so that the gateway's rate limits do
-- not cost more with every call in their window. A window from the last
-- minute or hour used to read every raw ledger row since its start, under
-- the principal's admission lock: at ten calls a second, 36,000 rows per
-- admission for the hour. It now reads at most one row per tool and
-- minute, and raw rows only for at most half a minute (see limits.go).
--
-- One row per (principal, UTC minute of created_at, tool), counting exactly
-- what a spend_daily row counts. minute is a timestamptz on a whole UTC
-- minute, so the limits compare it with instants as they are.
--
-- The rows live as long as the ledger rows they count, and go with the last
-- of them, as spend_daily's do. Only the last hour's rows serve the rate
-- limits, but a window may start at any instant of the retained history and
-- must still be exact, and a horizon below which minute rows were dropped
-- would have to be shared by the reads, the trigger and Prune. There is at
-- most one row per ledger row, far fewer for a principal that calls more
-- than once a minute, and each has one index where a ledger row has three.
CREATE TABLE IF NOT EXISTS spend_minute (
    principal text        NOT NULL,
    minute    timestamptz NOT NULL,
    tool_id   text        NOT NULL,
    calls     bigint      NOT NULL,
    spend_usd numeric     NOT NULL,
    PRIMARY KEY (principal, minute, tool_id)
);

-- One function keeps both rollups, so a ledger write runs one trigger, not
-- two. It replaces spend_daily_apply, whose triggers are moved onto it
-- below. Buckets are taken in UTC whatever the caller's TimeZone: date_trunc
-- on a timestamptz would truncate in the session's zone, and some zones'
-- offsets are not whole minutes.
--
-- Both rows of a ledger row are locked in the same order, the day's and then
-- the minute's (which lies in that day), so writers of one principal's rows
-- cannot deadlock on them (see pruneLedger).
CREATE OR REPLACE FUNCTION spend_rollups_apply() RETURNS trigger
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
DECLARE
    calls_left bigint;
    old_day    date;
    old_minute timestamptz;
    new_day    date;
    new_minute timestamptz;
BEGIN
    IF TG_OP <> 'INSERT' THEN
        old_day := (OLD.created_at AT TIME ZONE 'UTC')::date;
        old_minute := date_trunc('minute', OLD.created_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC';
    END IF;
    IF TG_OP <> 'DELETE' THEN
        new_day := (NEW.created_at AT TIME ZONE 'UTC')::date;
        new_minute := date_trunc('minute', NEW.created_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC';
    END IF;
    IF TG_OP = 'UPDATE' AND OLD.principal = NEW.principal AND OLD.tool_id = NEW.tool_id
        AND OLD.created_at = NEW.created_at THEN
        -- The usual update: a reservation released (or restored); the row
        -- stays in its buckets, so only the spend moves.
        UPDATE spend_daily
        SET spend_usd = spend_usd
            - CASE WHEN OLD.state = 'released' THEN 0 ELSE OLD.amount_usd END
            + CASE WHEN NEW.state = 'released' THEN 0 ELSE NEW.amount_usd END
        WHERE principal = NEW.principal AND day = new_day AND tool_id = NEW.tool_id;
        UPDATE spend_minute
        SET spend_usd = spend_usd
            - CASE WHEN OLD.state = 'released' THEN 0 ELSE OLD.amount_usd END
            + CASE WHEN NEW.state = 'released' THEN 0 ELSE NEW.amount_usd END
        WHERE principal = NEW.principal AND minute = new_minute AND tool_id = NEW.tool_id;
        RETURN NULL;
    END IF;
    IF TG_OP <> 'INSERT' THEN
        -- A rollup row that is missing (rows written with triggers off)
        -- is left missing: the update finds nothing, and nothing goes
        -- below zero.
        UPDATE spend_daily
        SET calls = calls - 1,
            spend_usd = spend_usd - CASE WHEN OLD.state = 'released' THEN 0 ELSE OLD.amount_usd END
        WHERE principal = OLD.principal AND day = old_day AND tool_id = OLD.tool_id
        RETURNING calls INTO calls_left;
        IF calls_left = 0 THEN
            -- Pruned history leaves no empty rows behind.
            DELETE FROM spend_daily
            WHERE principal = OLD.principal AND day = old_day AND tool_id = OLD.tool_id;
        END IF;
        UPDATE spend_minute
        SET calls = calls - 1,
            spend_usd = spend_usd - CASE WHEN OLD.state = 'released' THEN 0 ELSE OLD.amount_usd END
        WHERE principal = OLD.principal AND minute = old_minute AND tool_id = OLD.tool_id
        RETURNING calls INTO calls_left;
        IF calls_left = 0 THEN
            DELETE FROM spend_minute
            WHERE principal = OLD.principal AND minute = old_minute AND tool_id = OLD.tool_id;
        END IF;
    END IF;
    IF TG_OP <> 'DELETE' THEN
        INSERT INTO spend_daily AS d (principal, day, tool_id, calls, spend_usd)
        VALUES (NEW.principal, new_day, NEW.tool_id, 1,
            CASE WHEN NEW.state = 'released' THEN 0 ELSE NEW.amount_usd END)
        ON CONFLICT (principal, day, tool_id) DO UPDATE
        SET calls = d.calls + 1, spend_usd = d.spend_usd + EXCLUDED.spend_usd;
        INSERT INTO spend_minute AS m (principal, minute, tool_id, calls, spend_usd)
        VALUES (NEW.principal, new_minute, NEW.tool_id, 1,
            CASE WHEN NEW.state = 'released' THEN 0 ELSE NEW.amount_usd END)
        ON CONFLICT (principal, minute, tool_id) DO UPDATE
        SET calls = m.calls + 1, spend_usd = m.spend_usd + EXCLUDED.spend_usd;
    END IF;
    RETURN NULL;
END
$$;

-- Writers wait here until the triggers call the new function and the minute
-- rollups are filled, so no ledger write falls between the backfill and the
-- first trigger.
LOCK TABLE spend_ledger IN SHARE ROW EXCLUSIVE MODE;

DROP TRIGGER IF EXISTS spend_daily_insert_delete ON spend_ledger;
DROP TRIGGER IF EXISTS spend_rollups_insert_delete ON spend_ledger;
CREATE TRIGGER spend_rollups_insert_delete
    AFTER INSERT OR DELETE ON spend_ledger
    FOR EACH ROW EXECUTE FUNCTION spend_rollups_apply();

-- As before, charging a reservation (reserved to charged) changes no
-- rollup, so the common finish does not call the function at all.
DROP TRIGGER IF EXISTS spend_daily_update ON spend_ledger;
DROP TRIGGER IF EXISTS spend_rollups_update ON spend_ledger;
CREATE TRIGGER spend_rollups_update
    AFTER UPDATE ON spend_ledger
    FOR EACH ROW
    WHEN (OLD.principal IS DISTINCT FROM NEW.principal
        OR OLD.tool_id IS DISTINCT FROM NEW.tool_id
        OR OLD.created_at IS DISTINCT FROM NEW.created_at
        OR OLD.amount_usd IS DISTINCT FROM NEW.amount_usd
        OR (OLD.state = 'released') IS DISTINCT FROM (NEW.state = 'released'))
    EXECUTE FUNCTION spend_rollups_apply();

DROP FUNCTION IF EXISTS spend_daily_apply();

DELETE FROM spend_minute;
INSERT INTO spend_minute (principal, minute, tool_id, calls, spend_usd)
SELECT principal, date_trunc('minute', created_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC', tool_id, count(*),
    COALESCE(sum(amount_usd) FILTER (WHERE state <> 'released'), 0)
FROM spend_ledger
GROUP BY 1, 2, 3;
