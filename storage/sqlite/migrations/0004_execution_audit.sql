-- The audit trail (contract section 17). An execution now carries what an
-- audit item shows: the tool's slug, the manifest digest, the price and fee
-- beside the total (price and fee NULL for executions from before this
-- migration whose quote was gone: read as the total and no fee), and how
-- the call was approved (digest, standing, or an approver's grant, with
-- its id).
ALTER TABLE executions ADD COLUMN tool_slug TEXT NOT NULL DEFAULT '';
ALTER TABLE executions ADD COLUMN manifest_digest TEXT NOT NULL DEFAULT '';
ALTER TABLE executions ADD COLUMN price INTEGER;
ALTER TABLE executions ADD COLUMN fee INTEGER;
ALTER TABLE executions ADD COLUMN approval TEXT NOT NULL DEFAULT '';
ALTER TABLE executions ADD COLUMN grant_id BLOB; -- NULL without one

-- Executions written before this migration take what their quote says.
UPDATE executions
SET tool_slug = q.tool_slug, manifest_digest = q.manifest_digest, price = q.price, fee = q.fee
FROM quotes q
WHERE q.id = executions.quote_id AND executions.price IS NULL;

-- A caller's executions, newest first: the listing's order and keyset
-- cursor, and the spend summary's window.
CREATE INDEX executions_principal_created ON executions (principal, created_at DESC, id DESC);
