// Package sqlstore is the code the SQL backends (storage/postgres and
// storage/sqlite) share where it is the same code: reading their embedded
// migrations, collecting usage rows, and writing amounts as text. The SQL
// itself stays in each backend, in its own dialect.
package sqlstore
