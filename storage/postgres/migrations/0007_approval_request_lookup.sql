-- A caller looks for the approval request of one call (its tool and input
-- hash) to find its grant, on every call that needs an approver: an MCP
-- client's retry of a call finds the request its first try made. The
-- newest comes first, and the lookup reads one entry, however many
-- requests the principal has made.
CREATE INDEX IF NOT EXISTS approval_requests_call_idx
    ON approval_requests (principal, tool_id, input_sha256, created_at DESC, id DESC);
