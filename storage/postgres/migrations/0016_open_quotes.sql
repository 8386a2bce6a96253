-- A principal's open quotes, counted by every quote against its cap
-- (storage.Store.CreateQuoteCapped, issue 40): only quotes not yet used
-- are in the index, so the count walks the open ones and never the used
-- ones, which stay until Prune. A call's use of its quote now writes index
-- entries for the new row version (state is in the index's predicate),
-- where before it could update in place.
CREATE INDEX quotes_open_idx ON quotes (principal, expires_at) WHERE state = 'open';
