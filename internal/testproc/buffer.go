// Package testproc holds helpers shared by the tests and benchmarks that run
// servers and processes: end-to-end, load, example tests and the benchmarks.
package testproc

import (
	"bytes"
	"sync"
)

// SyncBuffer is a bytes.Buffer safe for a process's or a server's writes
// and a test's reads at the same time.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
