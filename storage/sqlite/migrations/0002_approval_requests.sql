-- Approval requests: a caller asks that an approver (a person) approve one
-- call, bound to one quote, tool version and input. Once approved, the
-- request's id is the grant the call carries; BeginExecution marks it used
-- in the write that admits the call. Expiry is not a stored state: it is
-- expires_at, the quote's own expiry. Conventions as in 0001_init.sql.
CREATE TABLE approval_requests (
    id              BLOB    PRIMARY KEY,
    principal       TEXT    NOT NULL,
    quote_id        BLOB    NOT NULL,
    tool_id         TEXT    NOT NULL,
    tool_slug       TEXT    NOT NULL,
    manifest_digest TEXT    NOT NULL,
    price           INTEGER NOT NULL,
    fee             INTEGER NOT NULL,
    total           INTEGER NOT NULL,
    -- The canonical input, byte for byte: the grant is bound to its hash.
    input           BLOB    NOT NULL,
    input_sha256    TEXT    NOT NULL,
    status          TEXT    NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'used')),
    decided_by      TEXT    NOT NULL,
    decided_at      INTEGER,
    remember        TEXT    NOT NULL,
    execution_id    BLOB,
    created_at      INTEGER NOT NULL,
    expires_at      INTEGER NOT NULL
) STRICT;
-- An approver's listing: the requests of some principals, newest first,
-- continued from a (created_at, id) cursor.
CREATE INDEX approval_requests_principal ON approval_requests (principal, created_at, id);
-- Prune walks requests by expiry.
CREATE INDEX approval_requests_expires_at ON approval_requests (expires_at);

-- Who set a standing approval: an approver's id, or '' for the caller.
-- Principals in approver mode count only approvals an approver set, so the
-- approvals written before this column existed, all the callers' own, keep
-- the default.
ALTER TABLE approvals ADD COLUMN approved_by TEXT NOT NULL DEFAULT '';
