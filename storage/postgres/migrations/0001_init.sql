-- Initial toolgate schema. Applied by migrate.go inside one transaction with
-- search_path set to the configured schema, so names here are unqualified.

-- Quotes. used_by_key is '' while the quote is open.
CREATE TABLE quotes (
    id              uuid          PRIMARY KEY,
    principal       text          NOT NULL,
    tool_id         text          NOT NULL,
    tool_slug       text          NOT NULL,
    tool_version    integer       NOT NULL,
    manifest_digest text          NOT NULL DEFAULT '',
    price_usd       numeric(20,4) NOT NULL,
    fee_usd         numeric(20,4) NOT NULL,
    total_usd       numeric(20,4) NOT NULL,
    created_at      timestamptz   NOT NULL,
    expires_at      timestamptz   NOT NULL,
    state           text          NOT NULL CHECK (state IN ('open', 'used')),
    used_by_key     text          NOT NULL DEFAULT ''
);
-- Prune walks quotes by expiry.
CREATE INDEX quotes_expires_at_idx ON quotes (expires_at);

-- One row per (principal, Idempotency-Key). The primary key is what makes a
-- key run once across processes; the lease columns let a retry take over a
-- run whose process died. The response lives on the execution row.
CREATE TABLE idempotency_records (
    principal    text        NOT NULL,
    key          text        NOT NULL,
    fingerprint  text        NOT NULL,
    execution_id uuid        NOT NULL,
    lease_token  uuid        NOT NULL,
    lease_until  timestamptz NOT NULL,
    finished     boolean     NOT NULL DEFAULT false,
    created_at   timestamptz NOT NULL,
    PRIMARY KEY (principal, key)
);
-- Prune deletes finished records by age and running ones by lease end; two
-- partial indexes keep both scans small.
CREATE INDEX idempotency_finished_created_idx ON idempotency_records (created_at) WHERE finished;
CREATE INDEX idempotency_running_lease_idx ON idempotency_records (lease_until) WHERE NOT finished;

CREATE TABLE executions (
    id              uuid          PRIMARY KEY,
    principal       text          NOT NULL,
    tool_id         text          NOT NULL,
    quote_id        uuid          NOT NULL,
    idempotency_key text          NOT NULL,
    status          text          NOT NULL CHECK (status IN ('running', 'completed', 'failed')),
    amount_usd      numeric(20,4) NOT NULL,
    charged         boolean       NOT NULL DEFAULT false,
    response        bytea,
    created_at      timestamptz   NOT NULL,
    finished_at     timestamptz
);

-- The spend and call history that limits are measured over. It is separate
-- from executions so that executions can be pruned after a day while a
-- month of spend stays measurable.
CREATE TABLE spend_ledger (
    execution_id uuid          PRIMARY KEY,
    principal    text          NOT NULL,
    tool_id      text          NOT NULL,
    amount_usd   numeric(20,4) NOT NULL,
    state        text          NOT NULL CHECK (state IN ('reserved', 'charged', 'released')),
    created_at   timestamptz   NOT NULL
);
CREATE INDEX spend_ledger_principal_idx ON spend_ledger (principal, created_at);
CREATE INDEX spend_ledger_principal_tool_idx ON spend_ledger (principal, tool_id, created_at);
CREATE INDEX spend_ledger_created_idx ON spend_ledger (created_at);

-- One row per principal that has ever begun a call. BeginExecution locks it
-- FOR UPDATE so that admissions of one principal, on any process, measure
-- and reserve one after the other.
CREATE TABLE principal_locks (
    principal text PRIMARY KEY
);

-- Usage counters, kept up to date by FinishExecution so reading them never
-- scans the executions.
CREATE TABLE tool_usage (
    tool_id      text   PRIMARY KEY,
    count        bigint NOT NULL,
    unique_users bigint NOT NULL
);
CREATE TABLE tool_users (
    tool_id   text NOT NULL,
    principal text NOT NULL,
    PRIMARY KEY (tool_id, principal)
);

CREATE TABLE approvals (
    principal       text        NOT NULL,
    tool_id         text        NOT NULL,
    manifest_digest text        NOT NULL,
    mode            text        NOT NULL,
    updated_at      timestamptz NOT NULL,
    PRIMARY KEY (principal, tool_id)
);

-- A caller's own spend controls as a JSON document (see spendcontrols.go for
-- its stable shape).
CREATE TABLE spend_controls (
    principal text  PRIMARY KEY,
    controls  jsonb NOT NULL
);
