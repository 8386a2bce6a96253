-- Ambiguous executions (nobody knows whether the provider ran the request)
-- and a person's resolution of them. Conventions as in 0001_init.sql.
--
-- An ambiguous execution is finished, but its ledger row stays 'reserved',
-- counted in the rollups and the limits as a running one's is, until it is
-- resolved: completed charges it, failed releases it. The ledger needs no
-- change for that; the executions table needs the new status and the
-- resolution.
--
-- SQLite cannot change a CHECK constraint in place, so the table is built
-- again with the new one and the rows copied over, rowids kept, in the
-- migration's transaction. Executions are pruned after a day, so the copy
-- is of a day's results at most. No trigger, view or foreign key names
-- the table.
CREATE TABLE executions_new (
    id                 BLOB    NOT NULL UNIQUE,
    principal          TEXT    NOT NULL,
    tool_id            TEXT    NOT NULL,
    quote_id           BLOB    NOT NULL,
    idempotency_key    TEXT    NOT NULL,
    status             TEXT    NOT NULL CHECK (status IN ('running', 'completed', 'failed', 'ambiguous')),
    amount             INTEGER NOT NULL,
    charged            INTEGER NOT NULL CHECK (charged IN (0, 1)),
    response           BLOB,   -- NULL while running
    created_at         INTEGER NOT NULL,
    finished_at        INTEGER, -- NULL while running
    tool_slug          TEXT    NOT NULL DEFAULT '',
    manifest_digest    TEXT    NOT NULL DEFAULT '',
    price              INTEGER,
    fee                INTEGER,
    approval           TEXT    NOT NULL DEFAULT '',
    grant_id           BLOB,   -- NULL without one
    -- How a person resolved it when it was ambiguous; all NULL otherwise.
    resolution_outcome TEXT    CHECK (resolution_outcome IN ('completed', 'failed')),
    resolved_by        TEXT,
    resolved_at        INTEGER,
    resolution_note    TEXT
) STRICT;

INSERT INTO executions_new (rowid, id, principal, tool_id, quote_id, idempotency_key, status, amount,
    charged, response, created_at, finished_at, tool_slug, manifest_digest, price, fee, approval, grant_id)
SELECT rowid, id, principal, tool_id, quote_id, idempotency_key, status, amount,
    charged, response, created_at, finished_at, tool_slug, manifest_digest, price, fee, approval, grant_id
FROM executions;

DROP TABLE executions;
ALTER TABLE executions_new RENAME TO executions;

-- A caller's executions, newest first, as 0004_execution_audit.sql made it.
CREATE INDEX executions_principal_created ON executions (principal, created_at DESC, id DESC);
