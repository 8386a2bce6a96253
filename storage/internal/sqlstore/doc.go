// Package sqlstore is the code the SQL backends (storage/postgres and
// storage/sqlite) share where it is the same code: reading their embedded
// migrations, collecting usage rows, writing amounts as text, and the JSON
// of the rules an execution keeps. The SQL itself stays in each backend,
// in its own dialect.
package sqlstore
