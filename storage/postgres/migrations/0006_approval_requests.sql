-- Approval requests: a caller asks that an approver (a person) approve one
-- call, bound to one quote, tool version and input. Once approved, the
-- request's id is the grant the call carries; BeginExecution marks it used
-- in the statement that admits the call. Expiry is not a stored state: it
-- is expires_at, the quote's own expiry.
CREATE TABLE IF NOT EXISTS approval_requests (
    id              uuid          PRIMARY KEY,
    principal       text          NOT NULL,
    quote_id        uuid          NOT NULL,
    tool_id         text          NOT NULL,
    tool_slug       text          NOT NULL,
    manifest_digest text          NOT NULL,
    price_usd       numeric(20,4) NOT NULL,
    fee_usd         numeric(20,4) NOT NULL,
    total_usd       numeric(20,4) NOT NULL,
    -- The canonical input, byte for byte: the grant is bound to its hash.
    input           bytea         NOT NULL,
    input_sha256    text          NOT NULL,
    status          text          NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'used')),
    decided_by      text          NOT NULL DEFAULT '',
    decided_at      timestamptz,
    remember        text          NOT NULL DEFAULT '',
    execution_id    uuid,
    created_at      timestamptz   NOT NULL,
    expires_at      timestamptz   NOT NULL
);
-- An approver's listing: the requests of some principals, newest first,
-- continued from a (created_at, id) cursor.
CREATE INDEX IF NOT EXISTS approval_requests_principal_idx
    ON approval_requests (principal, created_at DESC, id DESC);
-- Prune walks requests by expiry.
CREATE INDEX IF NOT EXISTS approval_requests_expires_at_idx ON approval_requests (expires_at);

-- Who set a standing approval: an approver's id, or '' for the caller.
-- Principals in approver mode count only approvals an approver set, so the
-- approvals written before this column existed, all the callers' own, keep
-- the default.
ALTER TABLE approvals ADD COLUMN IF NOT EXISTS approved_by text NOT NULL DEFAULT '';
