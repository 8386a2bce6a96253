-- Approvers of budgets (contract section 30): an approval request keeps
-- the ids of the budgets its principal counted in when it was made, so
-- that an approver of a budget finds the requests of its members, token
-- subjects the config never names among them, from any process on the
-- file. Conventions as in 0001_init.sql.
--
-- A process from before this migration that has the file open writes no
-- budgets, so its requests are seen by their principals' approvers as
-- before; it may stay open across it.

-- The budgets, a JSON array of their ids, nearest the principal first;
-- NULL when it counted in none.
ALTER TABLE approval_requests ADD COLUMN budgets TEXT;

-- A budget's listing of requests, newest first, continued from a
-- (created_at, id) cursor, as approval_request_approvers answers an
-- approver's. Kept from the budgets column by the triggers below, whoever
-- writes the request.
CREATE TABLE approval_request_budgets (
    budget     TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    request_id BLOB    NOT NULL,
    PRIMARY KEY (budget, created_at, request_id)
) STRICT, WITHOUT ROWID;

CREATE TRIGGER approval_requests_budgets_add AFTER INSERT ON approval_requests
WHEN NEW.budgets IS NOT NULL
BEGIN
    INSERT INTO approval_request_budgets (budget, created_at, request_id)
    SELECT DISTINCT b.value, NEW.created_at, NEW.id FROM json_each(NEW.budgets) b;
END;

-- Prune deletes requests by expiry; their entries go with them.
CREATE TRIGGER approval_requests_budgets_remove AFTER DELETE ON approval_requests
WHEN OLD.budgets IS NOT NULL
BEGIN
    DELETE FROM approval_request_budgets
    WHERE budget IN (SELECT b.value FROM json_each(OLD.budgets) b)
        AND created_at = OLD.created_at AND request_id = OLD.id;
END;
