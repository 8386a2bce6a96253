-- The ambiguous executions that wait for a person, counted at every
-- metrics scrape (storage.AmbiguousCounter). Only they are in the index,
-- so the count and the oldest walk them and never the day of finished
-- executions around them; a finish or resolution that moves a row in or
-- out of it writes one entry, and any other finish none. Conventions as in
-- 0001_init.sql. A process from before this migration that has the file
-- open keeps the index up to date with its own writes, as SQLite does for
-- every index, so it may stay open across it.
CREATE INDEX executions_ambiguous ON executions (created_at) WHERE status = 'ambiguous';
