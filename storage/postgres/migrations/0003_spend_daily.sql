-- Daily rollups of the spend ledger, so that measuring a limit does not cost
-- more as history grows. A monthly limit used to sum every ledger row of the
-- month under the principal's admission lock; it now sums at most one row
-- per tool and UTC day, and reads raw ledger rows only for the part of a
-- window that does not start at a UTC midnight (see limits.go).
--
-- One row per (principal, UTC day of created_at, tool): calls counts every
-- ledger row, spend_usd the amounts of those not released, exactly what
-- MeasureCalls and MeasureSpend count. spend_usd is unbounded numeric so a
-- day's sum cannot overflow the ledger's numeric(20,4).
CREATE TABLE IF NOT EXISTS spend_daily (
    principal text    NOT NULL,
    day       date    NOT NULL,
    tool_id   text    NOT NULL,
    calls     bigint  NOT NULL,
    spend_usd numeric NOT NULL,
    PRIMARY KEY (principal, day, tool_id)
);

-- The rollups are kept by triggers on the ledger, in the transaction that
-- writes the ledger row, rather than by each statement that writes one: so
-- they stay exact whoever writes (BeginExecution, FinishExecution, Prune, a
-- process of an older version during a rolling upgrade, an operator's fix).
-- The function carries the migration's search_path: a trigger runs with the
-- caller's, and a Store never relies on its connections' search_path.
CREATE OR REPLACE FUNCTION spend_daily_apply() RETURNS trigger
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
DECLARE
    calls_left bigint;
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.principal = NEW.principal AND OLD.tool_id = NEW.tool_id
        AND OLD.created_at = NEW.created_at THEN
        -- The usual update: a reservation released (or restored); the row
        -- stays in its bucket, so only the spend moves.
        UPDATE spend_daily
        SET spend_usd = spend_usd
            - CASE WHEN OLD.state = 'released' THEN 0 ELSE OLD.amount_usd END
            + CASE WHEN NEW.state = 'released' THEN 0 ELSE NEW.amount_usd END
        WHERE principal = NEW.principal AND day = (NEW.created_at AT TIME ZONE 'UTC')::date
            AND tool_id = NEW.tool_id;
        RETURN NULL;
    END IF;
    IF TG_OP <> 'INSERT' THEN
        UPDATE spend_daily
        SET calls = calls - 1,
            spend_usd = spend_usd - CASE WHEN OLD.state = 'released' THEN 0 ELSE OLD.amount_usd END
        WHERE principal = OLD.principal AND day = (OLD.created_at AT TIME ZONE 'UTC')::date
            AND tool_id = OLD.tool_id
        RETURNING calls INTO calls_left;
        IF calls_left = 0 THEN
            -- Pruned history leaves no empty rows behind.
            DELETE FROM spend_daily
            WHERE principal = OLD.principal AND day = (OLD.created_at AT TIME ZONE 'UTC')::date
                AND tool_id = OLD.tool_id;
        END IF;
    END IF;
    IF TG_OP <> 'DELETE' THEN
        INSERT INTO spend_daily AS d (principal, day, tool_id, calls, spend_usd)
        VALUES (NEW.principal, (NEW.created_at AT TIME ZONE 'UTC')::date, NEW.tool_id, 1,
            CASE WHEN NEW.state = 'released' THEN 0 ELSE NEW.amount_usd END)
        ON CONFLICT (principal, day, tool_id) DO UPDATE
        SET calls = d.calls + 1, spend_usd = d.spend_usd + EXCLUDED.spend_usd;
    END IF;
    RETURN NULL;
END
$$;

-- Writers wait here until the triggers exist and the rollups are filled, so
-- no ledger write falls between the backfill and the first trigger.
LOCK TABLE spend_ledger IN SHARE ROW EXCLUSIVE MODE;

DROP TRIGGER IF EXISTS spend_daily_insert_delete ON spend_ledger;
CREATE TRIGGER spend_daily_insert_delete
    AFTER INSERT OR DELETE ON spend_ledger
    FOR EACH ROW EXECUTE FUNCTION spend_daily_apply();

-- Charging a reservation (reserved to charged) changes no rollup, so the
-- common finish does not call the function at all.
DROP TRIGGER IF EXISTS spend_daily_update ON spend_ledger;
CREATE TRIGGER spend_daily_update
    AFTER UPDATE ON spend_ledger
    FOR EACH ROW
    WHEN (OLD.principal IS DISTINCT FROM NEW.principal
        OR OLD.tool_id IS DISTINCT FROM NEW.tool_id
        OR OLD.created_at IS DISTINCT FROM NEW.created_at
        OR OLD.amount_usd IS DISTINCT FROM NEW.amount_usd
        OR (OLD.state = 'released') IS DISTINCT FROM (NEW.state = 'released'))
    EXECUTE FUNCTION spend_daily_apply();

DELETE FROM spend_daily;
INSERT INTO spend_daily (principal, day, tool_id, calls, spend_usd)
SELECT principal, (created_at AT TIME ZONE 'UTC')::date, tool_id, count(*),
    COALESCE(sum(amount_usd) FILTER (WHERE state <> 'released'), 0)
FROM spend_ledger
GROUP BY 1, 2, 3;
