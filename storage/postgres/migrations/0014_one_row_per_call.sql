-- An admitted call's idempotency record is folded into its execution row
-- (issue 32): the execution now carries the key's fingerprint and lease,
-- and whether the key's run is finished is its status (anything but
-- 'running'). A call used to insert two rows at admission and update both
-- at its finish; it now inserts and updates one. The key's uniqueness is a
-- unique index on (idempotency_key, principal), which, with the principal's
-- admission lock, is what makes a key run once.
--
-- NO ROLLING UPGRADE ACROSS THIS MIGRATION. Instances of an earlier version
-- admit by inserting into idempotency_records, which no longer exists as a
-- table: stop them all before the first instance of this version starts.
-- Any that keep running fail every admission, finish and takeover with an
-- error saying so (the view below refuses writes), so none can run a key a
-- second time or lose a result silently; a call such an instance admitted
-- before the migration and finishes after it is answered with an error and
-- stays running until its lease ends, when a retry of its key takes it over
-- on an instance of this version.
--
-- Every write to executions and idempotency_records waits here until the
-- migration commits, so no record falls between the copy and the drop.
LOCK TABLE idempotency_records, executions IN ACCESS EXCLUSIVE MODE;

ALTER TABLE executions
    ADD COLUMN IF NOT EXISTS fingerprint text,
    ADD COLUMN IF NOT EXISTS lease_token uuid,
    ADD COLUMN IF NOT EXISTS lease_until timestamptz;

-- Each record onto the execution it names. Both were always written by one
-- statement and pruned by one, so every execution has its record, with the
-- same principal, key and creation time, and the record is finished
-- exactly when the execution's status is no longer 'running'.
UPDATE executions e
SET fingerprint = i.fingerprint, lease_token = i.lease_token, lease_until = i.lease_until
FROM idempotency_records i
WHERE i.execution_id = e.id AND i.principal = e.principal AND i.key = e.idempotency_key;

-- An execution with no record, which no version writes (only a hand-made
-- row could be one), keeps its key claimed, with a fingerprint no call has
-- and a lease that has ended: a retry under its key is refused as a
-- conflict rather than run again, and Prune deletes it like any other.
UPDATE executions
SET fingerprint = '', lease_token = '00000000-0000-0000-0000-000000000000', lease_until = created_at
WHERE fingerprint IS NULL;

ALTER TABLE executions
    ALTER COLUMN fingerprint SET NOT NULL,
    ALTER COLUMN lease_token SET NOT NULL,
    ALTER COLUMN lease_until SET NOT NULL;

-- The key, once per principal: the admission looks it up here, and a
-- second row for it fails the insert, whoever writes. The key comes first
-- so that the index serves only lookups of a key: led by the principal, it
-- would draw the audit's reads of a principal's window away from
-- executions_principal_created_idx, whose range they are.
CREATE UNIQUE INDEX IF NOT EXISTS executions_key_idx ON executions (idempotency_key, principal);

-- Prune deletes finished executions by age and running ones by the end of
-- their lease. As idempotency_prune_idx did (migration 0004), one index on
-- the earlier of the two instants serves both conditions, and it names no
-- column a finish changes: a partial index on status would make every
-- finish write a new entry in every index of the table instead of
-- rewriting its row in place (a heap-only update). Only a takeover, which
-- moves lease_until, writes index entries.
CREATE INDEX IF NOT EXISTS executions_prune_idx ON executions (LEAST(created_at, lease_until));

DROP TABLE idempotency_records;

-- What the records were, for whoever reads them (an operator's query, a
-- dashboard, a load test's accounting): the same columns, read from the
-- executions. Nothing of toolgate reads it. Writes to it fail, so that an
-- instance of an earlier version left running errs instead of claiming
-- keys no instance of this version would see.
CREATE VIEW idempotency_records AS
SELECT principal, idempotency_key AS key, fingerprint, id AS execution_id, lease_token, lease_until,
    status <> 'running' AS finished, created_at
FROM executions;

CREATE OR REPLACE FUNCTION idempotency_records_read_only() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    RAISE EXCEPTION 'idempotency_records is a read-only view since migration 0014: stop gateways of earlier versions'
        USING ERRCODE = 'read_only_sql_transaction';
END
$$;

CREATE TRIGGER idempotency_records_read_only
    INSTEAD OF INSERT OR UPDATE OR DELETE ON idempotency_records
    FOR EACH ROW EXECUTE FUNCTION idempotency_records_read_only();
