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
