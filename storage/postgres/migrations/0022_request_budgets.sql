-- Approvers of budgets (contract section 30): an approval request keeps
-- the ids of the budgets its principal counted in when it was made, so
-- that an approver of a budget finds the requests of its members, token
-- subjects the config never names among them, on every instance.
--
-- Instances of an earlier version may run beside this one: they write no
-- budgets, so their requests are seen by the approvers of their principals
-- as before. The column is nullable with no default, so it is added
-- without rewriting the table.
ALTER TABLE approval_requests ADD COLUMN IF NOT EXISTS budgets text[];

-- An approver's listing finds the requests of its budgets (budgets &&
-- ARRAY[...]). Requests that counted in no budget write no entry, nor do
-- those a rule named approvers for, which only those approvers see.
CREATE INDEX IF NOT EXISTS approval_requests_budgets_idx
    ON approval_requests USING gin (budgets) WHERE budgets IS NOT NULL AND approvers IS NULL;
