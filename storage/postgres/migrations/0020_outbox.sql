-- The outbox (storage.Outbox): every event the gateway sends is a row
-- here, written in the transaction of the change that caused it, and
-- delivered from here by any instance on the schema (see outbox.go).
--
-- Instances of an earlier version may run beside this one: they write no
-- events and read none. They still claim their alerts in alerts_sent,
-- which stays, and which Prune still empties.

-- An event, pending until a deliverer records its delivery or its failure
-- for good. Ids and types compare byte by byte (COLLATE "C"), as every
-- other backend orders them. The payload is kept as the bytes it was
-- written, byte for byte: the deliverer signs those bytes. A jsonb column
-- would give back another spelling of the same value and refuse an
-- escaped NUL (\u0000), which JSON allows; a text one would refuse bytes
-- that are not UTF-8, which a caller's input may carry into a payload.
CREATE TABLE IF NOT EXISTS events (
    id              text COLLATE "C" PRIMARY KEY,
    type            text COLLATE "C" NOT NULL,
    payload         bytea       NOT NULL,
    created_at      timestamptz NOT NULL,
    status          text        NOT NULL,
    attempts        integer     NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL,
    retrying_since  timestamptz NOT NULL,
    lease_token     uuid,
    lease_until     timestamptz,
    last_error      text        NOT NULL DEFAULT '',
    finished_at     timestamptz
);

-- The events a claim may take: pending ones, by when they are due. A
-- delivered or failed event leaves the index.
CREATE INDEX IF NOT EXISTS events_due ON events (next_attempt_at, created_at, id) WHERE status = 'pending';

-- Listings, newest first, of every event or of one status, and the
-- counts of what is pending.
CREATE INDEX IF NOT EXISTS events_newest ON events (created_at, id);
CREATE INDEX IF NOT EXISTS events_by_status ON events (status, created_at, id);

-- Prune takes the delivered events by when they were delivered.
CREATE INDEX IF NOT EXISTS events_delivered ON events (finished_at) WHERE status = 'delivered';

-- How many events of each type were ever delivered or failed for good
-- (status), bumped in the transaction that records the attempt. Pruning
-- deletes events, never these counts.
CREATE TABLE IF NOT EXISTS event_counts (
    type   text COLLATE "C" NOT NULL,
    status text   NOT NULL,
    n      bigint NOT NULL,
    PRIMARY KEY (type, status)
);
