-- Budgets of teams and the organization (contract section 26): a call
-- counts in every budget its admission names (storage.Begin.Budgets), on
-- the calendar day it gave in that budget's time zone, and admission checks
-- and reserves on all of them in its one write. Conventions as in
-- 0001_init.sql.
--
-- A call's budgets are kept on its execution, a JSON array of
-- {"budget": id, "day": "YYYY-MM-DD"} in the order admission gave them, and
-- NULL for a call in none. The triggers below keep the budgets' tables
-- exact from that column, whoever writes the execution, the way the
-- triggers of 0010_reservation_on_execution.sql keep a principal's
-- rollups; each one's WHEN stops at a NULL column, so a gateway with no
-- budgets runs none of their statements.
--
-- A budget's history lives apart from the executions: they go after a day,
-- while a month's spend must stay measurable and summable. Prune takes it
-- out by day (prune.go), and no trigger follows an execution's deletion.
-- A process from before this migration admits calls with no budgets, which
-- is all it knows of, so it may still have the file open across it.
ALTER TABLE executions ADD COLUMN budgets TEXT;

-- What a budget's spend limits count: per budget, calendar day and tool,
-- the calls admitted and the amounts held (running or ambiguous) or
-- charged, as spend_daily counts a principal's. A window is whole days of
-- the budget's zone, so a limit sums at most one row per tool and day
-- (a month: 31 per tool), however many calls and members. first_at is the
-- creation of the first call the row counted, where the search for the
-- oldest call a refused limit counted starts (budget_calls).
CREATE TABLE budget_daily (
    budget   TEXT    NOT NULL,
    day      TEXT    NOT NULL,
    tool_id  TEXT    NOT NULL,
    calls    INTEGER NOT NULL,
    spend    INTEGER NOT NULL,
    first_at INTEGER NOT NULL,
    PRIMARY KEY (budget, day, tool_id)
) STRICT, WITHOUT ROWID;

-- A budget's calls one by one, in order of creation: its calls limits (the
-- rate its members share) count the rows from the window's start on the
-- key, a minute's worth, and a refusal finds the oldest there. released is
-- 1 once the call's amount was given back, so that the oldest call a spend
-- limit counts is one that still holds its amount.
CREATE TABLE budget_calls (
    budget       TEXT    NOT NULL,
    created_at   INTEGER NOT NULL,
    execution_id BLOB    NOT NULL,
    tool_id      TEXT    NOT NULL,
    day          TEXT    NOT NULL,
    released     INTEGER NOT NULL CHECK (released IN (0, 1)),
    PRIMARY KEY (budget, created_at, execution_id)
) STRICT, WITHOUT ROWID;

-- What a budget's spend summary sums: per budget, day, principal and tool
-- (its slug, or its id for a call that has none), the charged calls and
-- their amounts. Written when a call is charged; a group of the summary
-- is a range of the key, whoever made the calls.
CREATE TABLE budget_spend (
    budget    TEXT    NOT NULL,
    day       TEXT    NOT NULL,
    principal TEXT    NOT NULL,
    tool      TEXT    NOT NULL,
    calls     INTEGER NOT NULL,
    charged   INTEGER NOT NULL,
    PRIMARY KEY (budget, day, principal, tool)
) STRICT, WITHOUT ROWID;

-- Alerts sent (storage.AlertLedger): an id is claimed by inserting it, and
-- the file's write lock and the key make exactly one claim of an id win,
-- whichever process makes it. Prune forgets claims by when they were made.
CREATE TABLE alerts_sent (
    id         TEXT    PRIMARY KEY,
    claimed_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
CREATE INDEX alerts_sent_claimed_at ON alerts_sent (claimed_at);

-- Admitting a call counts it in each of its budgets: one call and its
-- amount (running, so held) in the day's row for its tool, and its row
-- among the budget's calls. Admission always inserts a running execution;
-- the amounts are written for any status all the same, as 0010's are.
CREATE TRIGGER executions_budgets_count AFTER INSERT ON executions
WHEN NEW.budgets IS NOT NULL
BEGIN
    INSERT INTO budget_daily (budget, day, tool_id, calls, spend, first_at)
    SELECT b.value ->> 'budget', b.value ->> 'day', NEW.tool_id, 1,
        iif(NEW.status IN ('running', 'ambiguous') OR NEW.charged = 1, NEW.amount, 0), NEW.created_at
    FROM json_each(NEW.budgets) b WHERE true
    ON CONFLICT (budget, day, tool_id) DO UPDATE
    SET calls = calls + 1, spend = spend + excluded.spend, first_at = min(first_at, excluded.first_at);
    INSERT INTO budget_calls (budget, created_at, execution_id, tool_id, day, released)
    SELECT b.value ->> 'budget', NEW.created_at, NEW.id, NEW.tool_id, b.value ->> 'day',
        iif(NEW.status IN ('running', 'ambiguous') OR NEW.charged = 1, 0, 1)
    FROM json_each(NEW.budgets) b;
END;

-- Releasing a call (a finish neither charged nor ambiguous, a resolution to
-- failed) gives its amount back to every budget it counts in; charging it
-- changes no limit, so the common finish runs nothing here. A day's row
-- already pruned is left gone, and spend never goes below zero.
CREATE TRIGGER executions_budgets_settle AFTER UPDATE OF status, charged ON executions
WHEN NEW.budgets IS NOT NULL
    AND (OLD.status IN ('running', 'ambiguous') OR OLD.charged = 1) <> (NEW.status IN ('running', 'ambiguous') OR NEW.charged = 1)
BEGIN
    UPDATE budget_daily
    SET spend = max(0, spend
        - iif(OLD.status IN ('running', 'ambiguous') OR OLD.charged = 1, OLD.amount, 0)
        + iif(NEW.status IN ('running', 'ambiguous') OR NEW.charged = 1, NEW.amount, 0))
    WHERE tool_id = NEW.tool_id
        AND (budget, day) IN (SELECT b.value ->> 'budget', b.value ->> 'day' FROM json_each(NEW.budgets) b);
    UPDATE budget_calls
    SET released = iif(NEW.status IN ('running', 'ambiguous') OR NEW.charged = 1, 0, 1)
    WHERE created_at = NEW.created_at AND execution_id = NEW.id
        AND budget IN (SELECT b.value ->> 'budget' FROM json_each(NEW.budgets) b);
END;

-- Charging a call (a completed finish, a resolution to completed) adds it
-- to each budget's spend summary, on its day, under its principal and tool.
CREATE TRIGGER executions_budgets_charge AFTER UPDATE OF charged ON executions
WHEN NEW.budgets IS NOT NULL AND OLD.charged = 0 AND NEW.charged = 1
BEGIN
    INSERT INTO budget_spend (budget, day, principal, tool, calls, charged)
    SELECT b.value ->> 'budget', b.value ->> 'day', NEW.principal, coalesce(nullif(NEW.tool_slug, ''), NEW.tool_id), 1, NEW.amount
    FROM json_each(NEW.budgets) b WHERE true
    ON CONFLICT (budget, day, principal, tool) DO UPDATE
    SET calls = calls + 1, charged = charged + excluded.charged;
END;
