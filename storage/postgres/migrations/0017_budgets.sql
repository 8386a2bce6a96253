-- Budgets for teams and the organization (issue 42). A call admitted with
-- budgets (storage.Begin.Budgets) counts in each of them, whoever its
-- principal, on its calendar day in that budget's time zone. Nothing here
-- is touched by a call that counts in no budget: the admission, the finish
-- and the limits of such a call keep their statements (see budget.go).
--
-- Instances of an earlier version may run beside this one: they know no
-- budgets, and their calls count in none. Nothing they do reads or writes
-- what this migration adds.

-- The budgets a call counts in and its day in each, in the same order;
-- NULL for a call in no budget. A constant-free nullable column is added
-- without rewriting the table.
ALTER TABLE executions
    ADD COLUMN IF NOT EXISTS budgets text[],
    ADD COLUMN IF NOT EXISTS budget_days date[];

-- A budget's calls limit (its rate per minute) counts the raw calls of
-- the part of its window that is not a whole minute. Only calls in a budget are in the index, so the
-- principal-only calls that make up most of a busy minute are never
-- walked, and an admission outside every budget writes no entry. A finish
-- changes neither column, so it still updates its row in place.
CREATE INDEX IF NOT EXISTS executions_budgeted_idx ON executions (created_at) WHERE budgets IS NOT NULL;

-- One row per budget, locked by every admission that counts in it, after
-- the principal's admission lock and in the order of the budgets' ids:
-- admissions sharing a budget measure and reserve one after the other, on
-- any process, and admissions of different principals sharing budgets
-- cannot wait on each other in a cycle. Rows are created on first use and
-- never deleted.
CREATE TABLE IF NOT EXISTS budget_locks (
    budget text PRIMARY KEY
);

-- What a budget's spend limits count: per budget, day (the budget's own)
-- and tool, the calls admitted and the amounts they hold or were charged
-- (an admission adds, a release takes its amount back). Amounts are
-- unconstrained numeric: an organization's sum may pass what numeric(20,4)
-- holds.
CREATE TABLE IF NOT EXISTS budget_daily (
    budget    text    NOT NULL,
    day       date    NOT NULL,
    tool_id   text    NOT NULL,
    calls     bigint  NOT NULL,
    spend_usd numeric NOT NULL,
    PRIMARY KEY (budget, day, tool_id)
);

-- What a budget's calls limits count for whole minutes: per budget, UTC
-- minute and tool, the calls admitted, whatever their outcome. A window
-- then reads a row per minute and tool, and the raw calls of at most half
-- a minute (see budgetLimitsCTE), however busy the budget.
CREATE TABLE IF NOT EXISTS budget_minute (
    budget  text        NOT NULL,
    minute  timestamptz NOT NULL,
    tool_id text        NOT NULL,
    calls   bigint      NOT NULL,
    PRIMARY KEY (budget, minute, tool_id)
);

-- What a budget's calls were charged, per day, principal and tool (its
-- slug, or its id when it had none), for its spend report: a completed
-- finish or resolution adds to it. It outlives the executions, until Prune
-- removes the ledger's history.
CREATE TABLE IF NOT EXISTS budget_spend (
    budget    text    NOT NULL,
    day       date    NOT NULL,
    principal text    NOT NULL,
    tool      text    NOT NULL,
    calls     bigint  NOT NULL,
    spend_usd numeric NOT NULL,
    PRIMARY KEY (budget, day, principal, tool)
);

-- Alerts sent once across the fleet (storage.AlertLedger): the first
-- instance to insert an id sends it.
CREATE TABLE IF NOT EXISTS alerts_sent (
    id         text        PRIMARY KEY,
    claimed_at timestamptz NOT NULL
);
-- Prune forgets old claims by their time.
CREATE INDEX IF NOT EXISTS alerts_sent_claimed_at ON alerts_sent (claimed_at);
