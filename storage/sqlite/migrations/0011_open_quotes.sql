-- A principal's open quotes, counted by every quote against its cap
-- (storage.Store.CreateQuoteCapped): only quotes not yet used are in the
-- index, so the count walks the open ones and never the used ones, which
-- stay until Prune. Conventions as in 0001_init.sql.
CREATE INDEX quotes_open ON quotes (principal, expires_at) WHERE state = 'open';
