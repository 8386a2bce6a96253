-- Signed receipts: one per finished execution, one more per resolution of
-- an ambiguous one, chained per principal. Receipt seq of a principal is
-- sealed on the hash of its seq-1, so the primary key is what keeps each
-- chain gapless across instances: of two finishes that sealed the same seq,
-- the second fails on it and rolls back whole (see receipt.go).
--
-- Never pruned: a chain is only checkable whole. execution_id names the
-- execution the receipt is of, which Prune may have deleted since; there is
-- no foreign key for that reason. Rows are only ever inserted.
CREATE TABLE IF NOT EXISTS receipts (
    principal    text   NOT NULL,
    seq          bigint NOT NULL,
    execution_id uuid   NOT NULL,
    hash         text   NOT NULL,
    signed       bytea  NOT NULL,
    PRIMARY KEY (principal, seq)
);

-- A finished execution's response carries its receipt, about 1.4 KB that
-- compresses poorly (hashes and a signature). A typical response then took
-- its row past the 2 KB at which PostgreSQL starts to shrink a row, and the
-- response, even compressed, was moved out of line: two rows of the TOAST
-- table for every finish besides its own. Shrinking rows only past 2.5 KB
-- keeps the compressed response in the row, so a finish writes one row
-- version. The row so grows by about 2 KB when its call finishes, and an
-- update is heap-only (no new index entries) only where its page has that
-- room: inserts now leave 40% of each page free (fillfactor, see 0009).
ALTER TABLE executions SET (toast_tuple_target = 2560, fillfactor = 60);
