-- The outbox (storage.Outbox, contract section 28): every event the
-- gateway sends is a row here, inserted in the write of the change that
-- caused it (outbox.go), and delivered from here by any process on the
-- file. Conventions as in 0001_init.sql: instants are nanoseconds, and the
-- zero time ("no lease", "not finished") is the smallest INTEGER.
--
-- id is the event's webhook-id; an insert that finds it keeps the row as it
-- is, so a cause written twice, from any process, sends one event. The
-- payload is the body as given, bytes kept exactly. A pending event is due
-- at next_attempt_at and free when its lease ended (lease_until at or
-- before the claim's now): a claim sets a new lease_token and lease_until
-- and counts an attempt; the deliverer's answer ends the lease.
-- retrying_since starts the retry period (created_at, or a retry's time);
-- finished_at is when it was delivered or failed for good.
CREATE TABLE events (
    id              TEXT    PRIMARY KEY,
    type            TEXT    NOT NULL,
    payload         BLOB    NOT NULL,
    created_at      INTEGER NOT NULL,
    status          TEXT    NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
    attempts        INTEGER NOT NULL,
    next_attempt_at INTEGER NOT NULL,
    retrying_since  INTEGER NOT NULL,
    lease_token     BLOB,
    lease_until     INTEGER NOT NULL,
    last_error      TEXT    NOT NULL,
    finished_at     INTEGER NOT NULL
) STRICT;

-- Claiming walks the pending events in the order they are due, and only
-- them: the delivered and failed ones, however many are kept, are not in
-- this index.
CREATE INDEX events_due ON events (next_attempt_at, created_at, id) WHERE status = 'pending';

-- Listing walks one state's events newest first (the listing of every
-- state merges the three walks), EventStats counts the pending ones from
-- the oldest, and Prune walks the delivered ones from the oldest.
CREATE INDEX events_listed ON events (status, created_at, id);

-- How many events of each type were ever delivered or failed for good
-- (EventStats): counted in the write that records the attempt, and never
-- lowered, so pruning delivered events keeps the counts.
CREATE TABLE event_counts (
    type   TEXT    NOT NULL,
    status TEXT    NOT NULL CHECK (status IN ('delivered', 'failed')),
    n      INTEGER NOT NULL,
    PRIMARY KEY (type, status)
) STRICT, WITHOUT ROWID;

-- alerts_sent (0012_budgets.sql) is no longer written: a budget alert is an
-- event, written with the charge that reaches it. The table stays so that
-- a process of an earlier version still open on the file during an upgrade
-- keeps claiming its alerts there; it holds no more than that process
-- claimed, and may be dropped once no earlier process runs.
