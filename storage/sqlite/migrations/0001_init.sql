-- Initial toolgate schema for SQLite. Applied by migrate.go inside one
-- write transaction (BEGIN IMMEDIATE), so a process that opens the file at
-- the same moment waits and then finds the work done.
--
-- Conventions, for every table:
--   - STRICT, so a value of the wrong type is refused rather than converted
--     (an amount can never become a float);
--   - ids (quotes, executions, lease tokens) are the UUID's 16 bytes;
--   - instants are INTEGER nanoseconds since the Unix epoch, UTC (see
--     convert.go for the zero time and the ends of the range);
--   - amounts are INTEGER ten-thousandths of a US dollar: exact, and the
--     contract's four decimals; the only decimals kept as TEXT are the
--     limits of spend controls, which keep the scale they were given.

-- Quotes. used_by_key is '' while the quote is open.
CREATE TABLE quotes (
    id              BLOB    PRIMARY KEY,
    principal       TEXT    NOT NULL,
    tool_id         TEXT    NOT NULL,
    tool_slug       TEXT    NOT NULL,
    tool_version    INTEGER NOT NULL,
    manifest_digest TEXT    NOT NULL,
    price           INTEGER NOT NULL,
    fee             INTEGER NOT NULL,
    total           INTEGER NOT NULL,
    created_at      INTEGER NOT NULL,
    expires_at      INTEGER NOT NULL,
    state           TEXT    NOT NULL CHECK (state IN ('open', 'used')),
    used_by_key     TEXT    NOT NULL
) STRICT, WITHOUT ROWID;
-- Prune walks quotes by expiry.
CREATE INDEX quotes_expires_at ON quotes (expires_at);

-- One row per (principal, Idempotency-Key); the primary key is what makes
-- a key run once. The lease columns let a retry take over a run whose
-- process died. The response lives on the execution.
CREATE TABLE idempotency_records (
    principal    TEXT    NOT NULL,
    key          TEXT    NOT NULL,
    fingerprint  TEXT    NOT NULL,
    execution_id BLOB    NOT NULL,
    lease_token  BLOB    NOT NULL,
    lease_until  INTEGER NOT NULL,
    finished     INTEGER NOT NULL CHECK (finished IN (0, 1)),
    created_at   INTEGER NOT NULL,
    PRIMARY KEY (principal, key)
) STRICT, WITHOUT ROWID;
-- Prune walks records by creation. A lease never ends before its record
-- was created, so every prunable record (finished and created before the
-- cutoff, or running with a lease that ended before it) lies in that walk.
CREATE INDEX idempotency_records_created_at ON idempotency_records (created_at);

-- Executions keep the response body, several KiB, so they are a rowid
-- table: WITHOUT ROWID suits small rows only.
CREATE TABLE executions (
    id              BLOB    NOT NULL UNIQUE,
    principal       TEXT    NOT NULL,
    tool_id         TEXT    NOT NULL,
    quote_id        BLOB    NOT NULL,
    idempotency_key TEXT    NOT NULL,
    status          TEXT    NOT NULL CHECK (status IN ('running', 'completed', 'failed')),
    amount          INTEGER NOT NULL,
    charged         INTEGER NOT NULL CHECK (charged IN (0, 1)),
    response        BLOB,   -- NULL while running
    created_at      INTEGER NOT NULL,
    finished_at     INTEGER -- NULL while running
) STRICT;

-- The spend and call history that limits are measured over, apart from the
-- executions so that those can go after a day while a month of spend stays
-- measurable. minute and day are created_at's UTC minute and day (whole
-- minutes and days since the epoch), written with the row so that the
-- rollups below and the reads that use them bucket alike.
CREATE TABLE spend_ledger (
    id           INTEGER PRIMARY KEY,
    execution_id BLOB    NOT NULL UNIQUE,
    principal    TEXT    NOT NULL,
    tool_id      TEXT    NOT NULL,
    amount       INTEGER NOT NULL,
    state        TEXT    NOT NULL CHECK (state IN ('reserved', 'charged', 'released')),
    created_at   INTEGER NOT NULL,
    minute       INTEGER NOT NULL,
    day          INTEGER NOT NULL
) STRICT;
CREATE INDEX spend_ledger_principal_created_at ON spend_ledger (principal, created_at);
CREATE INDEX spend_ledger_created_at ON spend_ledger (created_at);

-- Rollups of the ledger per principal, tool and UTC day or minute: calls
-- counts every row, spend the amounts of those not released, exactly what
-- MeasureCalls and MeasureSpend count. A limit reads whole days and whole
-- minutes from here and raw rows for at most half a minute (limits.go), so
-- admission costs the same however long a principal's history. The
-- triggers keep them exact whoever writes the ledger, and drop a rollup row
-- with the last ledger row it counted.
CREATE TABLE spend_daily (
    principal TEXT    NOT NULL,
    day       INTEGER NOT NULL,
    tool_id   TEXT    NOT NULL,
    calls     INTEGER NOT NULL,
    spend     INTEGER NOT NULL,
    PRIMARY KEY (principal, day, tool_id)
) STRICT, WITHOUT ROWID;

CREATE TABLE spend_minute (
    principal TEXT    NOT NULL,
    minute    INTEGER NOT NULL,
    tool_id   TEXT    NOT NULL,
    calls     INTEGER NOT NULL,
    spend     INTEGER NOT NULL,
    PRIMARY KEY (principal, minute, tool_id)
) STRICT, WITHOUT ROWID;

CREATE TRIGGER spend_ledger_insert AFTER INSERT ON spend_ledger
BEGIN
    INSERT INTO spend_daily (principal, day, tool_id, calls, spend)
    VALUES (NEW.principal, NEW.day, NEW.tool_id, 1, iif(NEW.state = 'released', 0, NEW.amount))
    ON CONFLICT (principal, day, tool_id) DO UPDATE
    SET calls = calls + 1, spend = spend + excluded.spend;
    INSERT INTO spend_minute (principal, minute, tool_id, calls, spend)
    VALUES (NEW.principal, NEW.minute, NEW.tool_id, 1, iif(NEW.state = 'released', 0, NEW.amount))
    ON CONFLICT (principal, minute, tool_id) DO UPDATE
    SET calls = calls + 1, spend = spend + excluded.spend;
END;

-- Charging a reservation (reserved to charged) changes no rollup, so the
-- common finish runs no trigger; releasing one takes its amount out.
CREATE TRIGGER spend_ledger_settle AFTER UPDATE OF state ON spend_ledger
WHEN (OLD.state = 'released') <> (NEW.state = 'released')
BEGIN
    UPDATE spend_daily
    SET spend = spend - iif(OLD.state = 'released', 0, OLD.amount) + iif(NEW.state = 'released', 0, NEW.amount)
    WHERE principal = NEW.principal AND day = NEW.day AND tool_id = NEW.tool_id;
    UPDATE spend_minute
    SET spend = spend - iif(OLD.state = 'released', 0, OLD.amount) + iif(NEW.state = 'released', 0, NEW.amount)
    WHERE principal = NEW.principal AND minute = NEW.minute AND tool_id = NEW.tool_id;
END;

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

-- Usage counters, kept by FinishExecution so that reading them never scans
-- the executions. A principal counts as a new user of a tool only when its
-- tool_users row is inserted, so unique_users stays exact.
CREATE TABLE tool_usage (
    tool_id      TEXT    PRIMARY KEY,
    count        INTEGER NOT NULL,
    unique_users INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

CREATE TABLE tool_users (
    tool_id   TEXT NOT NULL,
    principal TEXT NOT NULL,
    PRIMARY KEY (tool_id, principal)
) STRICT, WITHOUT ROWID;

CREATE TABLE approvals (
    principal       TEXT    NOT NULL,
    tool_id         TEXT    NOT NULL,
    manifest_digest TEXT    NOT NULL,
    mode            TEXT    NOT NULL,
    updated_at      INTEGER NOT NULL,
    PRIMARY KEY (principal, tool_id)
) STRICT, WITHOUT ROWID;

-- A caller's own spend controls: one row per principal, present even when
-- nothing is set, and one row per tool it sets controls on. NULL is "not
-- set". Amounts are decimal text as given ("25.0000" stays "25.0000").
CREATE TABLE spend_controls (
    principal             TEXT PRIMARY KEY,
    max_per_call_usd      TEXT,
    daily_limit_usd       TEXT,
    monthly_limit_usd     TEXT,
    rate_limit_per_minute INTEGER,
    rate_limit_per_hour   INTEGER
) STRICT, WITHOUT ROWID;

CREATE TABLE spend_controls_tools (
    principal             TEXT    NOT NULL REFERENCES spend_controls (principal) ON DELETE CASCADE,
    tool_slug             TEXT    NOT NULL,
    allowed               INTEGER CHECK (allowed IN (0, 1)),
    max_per_call_usd      TEXT,
    daily_limit_usd       TEXT,
    monthly_limit_usd     TEXT,
    rate_limit_per_minute INTEGER,
    rate_limit_per_hour   INTEGER,
    PRIMARY KEY (principal, tool_slug)
) STRICT, WITHOUT ROWID;
