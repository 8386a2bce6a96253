package postgres

import (
	"errors"
	"fmt"
)

// DefaultSchema is the schema a Store uses when Config.Schema is empty.
const DefaultSchema = "public"

// maxIdentifierLen is PostgreSQL's NAMEDATALEN-1: longer names are silently
// truncated by the server, which would make two configured schemas collide.
const maxIdentifierLen = 63

// Config holds a Store's optional settings. A nil *Config means all defaults.
type Config struct {
	// Schema is the PostgreSQL schema that holds every toolgate table. It is
	// created when missing. Empty means DefaultSchema. Several gateways can
	// share one database by using different schemas.
	Schema string

	// SynchronousAdmission makes each call's admission wait for its WAL to
	// reach disk before the tool's provider is called, as its result's
	// commit always does. By default the admission commits without waiting
	// (synchronous_commit off for that transaction alone): it is visible to
	// every instance at once, and the result's commit, which waits, makes
	// it durable too, since the WAL reaches disk in order. What the wait
	// would add is confined to a crash of the database server or its host
	// while a call is with its provider; see "Durability" in the package
	// docs for what each choice does then. Set it where a call in flight
	// when the database crashes must still be able to record its result.
	SynchronousAdmission bool
}

// WithDefaults returns a copy of c (which may be nil) with every unset field
// given its default.
func (c *Config) WithDefaults() *Config {
	out := &Config{}
	if c != nil {
		*out = *c
	}
	if out.Schema == "" {
		out.Schema = DefaultSchema
	}
	return out
}

func (c *Config) validate() error {
	if len(c.Schema) > maxIdentifierLen {
		return fmt.Errorf("postgres: schema name %q is longer than %d bytes", c.Schema, maxIdentifierLen)
	}
	for _, r := range c.Schema {
		if r == 0 {
			return errors.New("postgres: schema name contains a NUL byte")
		}
	}
	return nil
}
