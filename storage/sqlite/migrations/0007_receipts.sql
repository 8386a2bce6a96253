-- Signed receipts (storage.Receipt): one per finished execution and one
-- more per resolution of an ambiguous one, in a chain per principal whose
-- seqs count from 1 with no gaps. Conventions as in 0001_init.sql.
--
-- A chain's head (its last seq and hash) is read, and the next receipt
-- inserted, in the write transaction that finishes the execution: the
-- file's write lock keeps each chain gapless however many processes share
-- the file, and the primary key refuses a second receipt at one seq.
--
-- Receipts are never pruned: a chain is verified from its first receipt.
-- The execution a receipt names is pruned after its day like any other, so
-- there is no foreign key. A signed receipt is near a KiB, so this is a
-- rowid table (see executions in 0001_init.sql), the primary key an index.
CREATE TABLE receipts (
    principal    TEXT    NOT NULL,
    seq          INTEGER NOT NULL CHECK (seq > 0),
    execution_id BLOB    NOT NULL,
    hash         TEXT    NOT NULL,
    signed       BLOB    NOT NULL,
    PRIMARY KEY (principal, seq)
) STRICT;
