-- Usage counters spread over shards. With one counter row per tool, every
-- FinishExecution of a popular tool queued on that row's lock until the
-- previous finisher had committed (and flushed its WAL). FinishExecution now
-- adds to one of a few dozen rows per tool, picked from the execution id, and
-- Usage sums them.
--
-- tool_usage stays: it holds the counts written before this migration, and
-- those a process of an older version writes during a rolling upgrade.
-- Usage adds it to the shards, so no count is moved and none is lost.
-- unique_users stays exact because a principal is counted, in whichever
-- table, only by the finish whose insert into tool_users created its row.
CREATE TABLE IF NOT EXISTS tool_usage_shards (
    tool_id      text     NOT NULL,
    shard        smallint NOT NULL,
    count        bigint   NOT NULL,
    unique_users bigint   NOT NULL,
    PRIMARY KEY (tool_id, shard)
);
