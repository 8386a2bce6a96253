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
