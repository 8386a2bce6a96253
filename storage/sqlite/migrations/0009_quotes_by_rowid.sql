-- Quotes become a rowid table, their id a unique index beside it. Ids are
-- random, so in a table keyed by them (WITHOUT ROWID, as 0001_init.sql
-- made it) each quote's row went to a page of its own among the table's,
-- written when the quote was created and again when a call used it: two
-- pages of the write-ahead log per call, in two transactions. A rowid
-- table keeps the rows in the order they were created, so the quotes
-- created, and then used, at about the same moment share their pages;
-- only the index entry, a tenth of the row's size, goes to a page of its
-- own. Conventions as in 0001_init.sql.
--
-- SQLite cannot change a table's key in place, so the table is built again
-- and its rows copied over, in the migration's transaction. Quotes are
-- pruned once they have expired, so the copy is of the open ones and a
-- day's used ones at most. No trigger, view or foreign key names the table.
CREATE TABLE quotes_new (
    id              BLOB    NOT NULL UNIQUE,
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
) STRICT;

INSERT INTO quotes_new (id, principal, tool_id, tool_slug, tool_version, manifest_digest,
    price, fee, total, created_at, expires_at, state, used_by_key)
SELECT id, principal, tool_id, tool_slug, tool_version, manifest_digest,
    price, fee, total, created_at, expires_at, state, used_by_key
FROM quotes ORDER BY created_at;

DROP TABLE quotes;
ALTER TABLE quotes_new RENAME TO quotes;

-- Prune walks quotes by expiry, as 0001_init.sql made it.
CREATE INDEX quotes_expires_at ON quotes (expires_at);
