-- A finished execution's stored response, the one value of a pair large
-- enough to be compressed, is compressed with lz4 rather than pglz where
-- the server was built with lz4 (PostgreSQL 14 and later, as most
-- packages are): pglz was about 3 % of the database's CPU per pair at 32
-- clients (issue 53), lz4 compresses several times faster. Rows already
-- stored keep pglz, which the server still reads; instances of an earlier
-- version write through the same column, so they compress with lz4 too.
-- The change is to the column's settings only: no rewrite, a moment's
-- lock. A server without lz4, or older than 14, keeps pglz, and the
-- migration still counts as applied.
DO $$
BEGIN
    EXECUTE 'ALTER TABLE executions ALTER COLUMN response SET COMPRESSION lz4';
EXCEPTION WHEN feature_not_supported OR syntax_error OR invalid_parameter_value THEN
    NULL;
END
$$;
