-- The organization's rules (contract section 29): an approval request a
-- rule asked for names the approvers who alone may see and decide it, and
-- a call's execution keeps the rules that took part in its admission, for
-- the audit trail. Conventions as in 0001_init.sql.
--
-- A process from before this migration that has the file open writes
-- neither column, so its requests name no approvers and its calls no
-- rules, which is all it knows of; it may stay open across it.

-- The rules that matched a call, a JSON array of {"name", "effect",
-- "mode"} in the order admission gave them; NULL when none did.
ALTER TABLE executions ADD COLUMN rules TEXT;

-- The approvers a rule named for a request, a JSON array of their ids in
-- the order the rule named them; NULL for a request any of its principal's
-- approvers may decide, as every request before rules.
ALTER TABLE approval_requests ADD COLUMN approvers TEXT;

-- An approver's listing of the requests named for it, newest first,
-- continued from a (created_at, id) cursor, as approval_requests_principal
-- answers a principal's. Kept from the approvers column by the triggers
-- below, whoever writes the request; a request that names none writes no
-- entry.
CREATE TABLE approval_request_approvers (
    approver   TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    request_id BLOB    NOT NULL,
    PRIMARY KEY (approver, created_at, request_id)
) STRICT, WITHOUT ROWID;

CREATE TRIGGER approval_requests_approvers_add AFTER INSERT ON approval_requests
WHEN NEW.approvers IS NOT NULL
BEGIN
    INSERT INTO approval_request_approvers (approver, created_at, request_id)
    SELECT DISTINCT a.value, NEW.created_at, NEW.id FROM json_each(NEW.approvers) a;
END;

-- Prune deletes requests by expiry; their entries go with them.
CREATE TRIGGER approval_requests_approvers_remove AFTER DELETE ON approval_requests
WHEN OLD.approvers IS NOT NULL
BEGIN
    DELETE FROM approval_request_approvers
    WHERE approver IN (SELECT a.value FROM json_each(OLD.approvers) a)
        AND created_at = OLD.created_at AND request_id = OLD.id;
END;
