-- The audit trail (contract section 17). An execution now carries what an
-- audit item shows: the tool's slug, the manifest digest, the price and fee
-- beside the total, and how the call was approved (digest, standing, or an
-- approver's grant, with its id: NULL without one). Until now these lived
-- only on the quote,
-- which retention may prune first, and in the stored response.
ALTER TABLE executions
    ADD COLUMN IF NOT EXISTS tool_slug       text          NOT NULL DEFAULT '',
    ADD COLUMN IF NOT EXISTS manifest_digest text          NOT NULL DEFAULT '',
    ADD COLUMN IF NOT EXISTS price_usd       numeric(20,4),
    ADD COLUMN IF NOT EXISTS fee_usd         numeric(20,4),
    ADD COLUMN IF NOT EXISTS approval        text          NOT NULL DEFAULT '',
    ADD COLUMN IF NOT EXISTS grant_id        uuid;

-- Executions written before this migration take what their quote says. A
-- quote outlives its execution's retention (it is pruned only once expired
-- for as long), so only rows a backlogged prune left behind stay without:
-- their price is read as their total and their fee as zero. How they were
-- approved was never recorded, and stays empty.
UPDATE executions e
SET tool_slug = q.tool_slug, manifest_digest = q.manifest_digest,
    price_usd = q.price_usd, fee_usd = q.fee_usd
FROM quotes q
WHERE q.id = e.quote_id AND e.price_usd IS NULL;

-- A caller's executions, newest first: the listing's order, its keyset
-- cursor and the spend summary's window all read this index. It holds no
-- column a finish changes (status, charged, response, finished_at), so
-- finishing an execution stays a heap-only update; status and tool are
-- filtered as the index is walked.
CREATE INDEX IF NOT EXISTS executions_principal_created_idx
    ON executions (principal, created_at DESC, id DESC);
