package postgres

import "github.com/toolgate/toolgate/storage"

// ListSQL and SpendSQL let the plan tests explain the very statements the
// audit queries run.
func (s *Store) ListSQL(q storage.ExecutionQuery) (string, []any) { return s.listSQL(q) }
func (s *Store) SpendSQL(q storage.SpendQuery) (string, []any)    { return s.spendSQL(q) }

// LockPrincipalSQL is the admission lock's statement for this Store's
// schema, for the test that it excludes an earlier version's form.
func (s *Store) LockPrincipalSQL() string { return s.sql(lockPrincipalSQL) }
