package sqlite

import (
	"fmt"
	"time"
)

// Defaults of Config's fields.
const (
	// DefaultBusyTimeout is how long a write waits for another process
	// holding the file's write lock before it fails.
	DefaultBusyTimeout = 5 * time.Second
	// DefaultReadConnections is the size of the pool that serves reads.
	DefaultReadConnections = 4
)

// maxReadConnections bounds Config.ReadConnections: each connection keeps
// its own page cache, and reads are short, so more than this only costs
// memory.
const maxReadConnections = 64

// Config holds a Store's optional settings. A nil *Config means all defaults.
type Config struct {
	// BusyTimeout is how long an operation waits when another process
	// holds the database's write lock (or, rarely, blocks a read) before it
	// fails. Zero means DefaultBusyTimeout.
	BusyTimeout time.Duration
	// ReadConnections is how many connections serve reads at once. Writes
	// always go through one connection of their own. Zero means
	// DefaultReadConnections.
	ReadConnections int
}

// WithDefaults returns a copy of c (which may be nil) with every unset field
// given its default.
func (c *Config) WithDefaults() *Config {
	out := &Config{}
	if c != nil {
		*out = *c
	}
	if out.BusyTimeout == 0 {
		out.BusyTimeout = DefaultBusyTimeout
	}
	if out.ReadConnections == 0 {
		out.ReadConnections = DefaultReadConnections
	}
	return out
}

func (c *Config) validate() error {
	switch {
	case c.BusyTimeout < time.Millisecond:
		return fmt.Errorf("sqlite: BusyTimeout %s must be at least 1ms", c.BusyTimeout)
	case c.ReadConnections < 1 || c.ReadConnections > maxReadConnections:
		return fmt.Errorf("sqlite: ReadConnections %d must be from 1 to %d", c.ReadConnections, maxReadConnections)
	}
	return nil
}
