-- A finished execution's signed receipt is kept once, in its receipts row
-- (0007_receipts.sql): receipt_seq names it, on the principal's chain,
-- and the response column holds the response without it, which reads
-- join back (storage.WithReceipt). Before, the response held the receipt
-- as well, a second copy of near a KiB on every finish. Rows finished
-- before this migration keep their whole response and a NULL receipt_seq,
-- and read back as they were stored; so do executions finished without
-- a receipt. A resolution names its own receipt, the chain's later one.
ALTER TABLE executions ADD COLUMN receipt_seq INTEGER;
