-- One row per admitted call: the idempotency record (the key's fingerprint
-- and lease) moves into its execution, so admitting a call inserts one row
-- where it inserted two, and finishing it updates one where it updated
-- two. A record was finished exactly when its execution was no longer
-- running (both were written by the one write that finished it), so
-- finished is the execution's status and needs no column. Conventions as
-- in 0001_init.sql.
--
-- The record's created_at was its execution's (both the admission's now),
-- and records and executions were created and pruned together, so every
-- execution has its record and the key is unique among executions.
ALTER TABLE executions ADD COLUMN fingerprint TEXT NOT NULL DEFAULT '';
ALTER TABLE executions ADD COLUMN lease_token BLOB NOT NULL DEFAULT x'';
ALTER TABLE executions ADD COLUMN lease_until INTEGER NOT NULL DEFAULT 0;

UPDATE executions
SET fingerprint = i.fingerprint, lease_token = i.lease_token, lease_until = i.lease_until
FROM idempotency_records i
WHERE i.execution_id = executions.id;

DROP TABLE idempotency_records;

-- A key runs once: BeginExecution finds a call by its key here, and the
-- uniqueness refuses a second execution under one key whatever the code
-- above it does.
CREATE UNIQUE INDEX executions_key ON executions (principal, idempotency_key);
-- Prune walks executions by creation, as it walked records (see prune.go).
CREATE INDEX executions_created_at ON executions (created_at);
