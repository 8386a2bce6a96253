// Package jsonbuf encodes JSON exactly as json.Marshal does, into buffers
// kept from one use to the next. Marshal allocates every document's bytes
// anew; where they are only copied somewhere else and dropped (into a
// connection's buffer, or spliced into a larger document), a pooled buffer
// saves that allocation and the collector's work on it.
package jsonbuf

import (
	"bytes"
	"encoding/json"
	"sync"
)

// Buffer holds one encoded document at a time. It is not safe for
// concurrent use.
type Buffer struct {
	buf bytes.Buffer
	enc *json.Encoder
}

var pool = sync.Pool{New: func() any {
	b := new(Buffer)
	b.enc = json.NewEncoder(&b.buf)
	return b
}}

// maxPooled is the largest buffer kept for the next use; one grown on an
// exceptionally large document goes to the collector.
const maxPooled = 64 << 10

// Get returns a Buffer from the pool; Release gives it back.
func Get() *Buffer { return pool.Get().(*Buffer) }

// Marshal returns json.Marshal(v)'s bytes, in memory b owns: they are valid
// until b's next Marshal or its Release.
func (b *Buffer) Marshal(v any) ([]byte, error) {
	b.buf.Reset()
	if err := b.enc.Encode(v); err != nil {
		return nil, err
	}
	// Encode is Marshal with a newline after the value.
	return bytes.TrimSuffix(b.buf.Bytes(), []byte{'\n'}), nil
}

// Release returns b to the pool; nothing it returned may be used after.
func (b *Buffer) Release() {
	if b.buf.Cap() <= maxPooled {
		pool.Put(b)
	}
}
