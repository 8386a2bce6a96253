-- The hot path of a quote+call pair, made cheaper where no guarantee
-- depends on the cost (issue 21's measurements are in BENCHMARKS.md).
--
-- The rollup trigger function loses its SET search_path clause. A function
-- with any SET clause is called through a wrapper that saves, sets and
-- restores the setting on every call, and every admission calls it once
-- (for its ledger insert): measured under load, that wrapper was a few
-- percent of the database's CPU. The clause was there only so that the
-- body's table names resolved in the gateway's schema whatever the
-- caller's search_path; the body now names them with the schema itself,
-- written in when this migration runs, so it reads the same tables from
-- any session. Built-in functions and operators still resolve, since
-- pg_catalog is searched first unless a search_path names it later, which
-- no Store does. The body is otherwise that of migration 0005.
DO $migration$
BEGIN
EXECUTE format($function$
CREATE OR REPLACE FUNCTION %1$I.spend_rollups_apply() RETURNS trigger
LANGUAGE plpgsql
AS $body$
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
        UPDATE %1$I.spend_daily
        SET spend_usd = spend_usd
            - CASE WHEN OLD.state = 'released' THEN 0 ELSE OLD.amount_usd END
            + CASE WHEN NEW.state = 'released' THEN 0 ELSE NEW.amount_usd END
        WHERE principal = NEW.principal AND day = new_day AND tool_id = NEW.tool_id;
        UPDATE %1$I.spend_minute
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
        UPDATE %1$I.spend_daily
        SET calls = calls - 1,
            spend_usd = spend_usd - CASE WHEN OLD.state = 'released' THEN 0 ELSE OLD.amount_usd END
        WHERE principal = OLD.principal AND day = old_day AND tool_id = OLD.tool_id
        RETURNING calls INTO calls_left;
        IF calls_left = 0 THEN
            -- Pruned history leaves no empty rows behind.
            DELETE FROM %1$I.spend_daily
            WHERE principal = OLD.principal AND day = old_day AND tool_id = OLD.tool_id;
        END IF;
        UPDATE %1$I.spend_minute
        SET calls = calls - 1,
            spend_usd = spend_usd - CASE WHEN OLD.state = 'released' THEN 0 ELSE OLD.amount_usd END
        WHERE principal = OLD.principal AND minute = old_minute AND tool_id = OLD.tool_id
        RETURNING calls INTO calls_left;
        IF calls_left = 0 THEN
            DELETE FROM %1$I.spend_minute
            WHERE principal = OLD.principal AND minute = old_minute AND tool_id = OLD.tool_id;
        END IF;
    END IF;
    IF TG_OP <> 'DELETE' THEN
        INSERT INTO %1$I.spend_daily AS d (principal, day, tool_id, calls, spend_usd)
        VALUES (NEW.principal, new_day, NEW.tool_id, 1,
            CASE WHEN NEW.state = 'released' THEN 0 ELSE NEW.amount_usd END)
        ON CONFLICT (principal, day, tool_id) DO UPDATE
        SET calls = d.calls + 1, spend_usd = d.spend_usd + EXCLUDED.spend_usd;
        INSERT INTO %1$I.spend_minute AS m (principal, minute, tool_id, calls, spend_usd)
        VALUES (NEW.principal, new_minute, NEW.tool_id, 1,
            CASE WHEN NEW.state = 'released' THEN 0 ELSE NEW.amount_usd END)
        ON CONFLICT (principal, minute, tool_id) DO UPDATE
        SET calls = m.calls + 1, spend_usd = m.spend_usd + EXCLUDED.spend_usd;
    END IF;
    RETURN NULL;
END
$body$
$function$, current_schema());
END
$migration$;

-- A finish rewrites its execution's row (status, response, time). When the
-- page the row was inserted on has no room for the new version, the update
-- is not heap-only: it writes a new entry in each of the table's indexes.
-- Under concurrent load other callers' inserts fill that page between an
-- admission and its finish, and measured at 32 clients only 63% of finishes
-- were heap-only. Inserts now leave a quarter of each new page free for
-- those updates. Rows live a day at most (Prune), so the table soon has
-- only pages written this way.
ALTER TABLE executions SET (fillfactor = 75);
