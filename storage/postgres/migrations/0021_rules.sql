-- The organization's rules (contract section 29): an approval request a
-- rule asked for names the approvers who alone may see and decide it, and
-- a call's execution keeps the rules that took part in its admission, for
-- the audit trail.
--
-- Instances of an earlier version may run beside this one: they write
-- neither column, so their requests name no approvers and their calls no
-- rules, which is all they know of. Both columns are nullable with no
-- default, so they are added without rewriting either table.

-- The rules that matched a call, an array of {"name", "effect", "mode"} in
-- the order admission gave them; NULL when none did, so that the common
-- call writes nothing more.
ALTER TABLE executions ADD COLUMN IF NOT EXISTS rules jsonb;

-- The approvers a rule named for a request, in the order it named them;
-- NULL for a request any of its principal's approvers may decide, as
-- every request before rules.
ALTER TABLE approval_requests ADD COLUMN IF NOT EXISTS approvers text[];

-- An approver's listing finds the requests named for it (approvers @>
-- ARRAY[id]). Only those are in the index: the requests that name no
-- approvers, most of them, write no entry.
CREATE INDEX IF NOT EXISTS approval_requests_approvers_idx
    ON approval_requests USING gin (approvers) WHERE approvers IS NOT NULL;
