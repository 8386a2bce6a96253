package jcs

// Buffer canonicalizes one document after another in the same memory: the
// output and the scratch space of reordered objects are kept from one call
// to the next. A receipt hashes the canonical form of every call's output
// and then drops it, so the gateway keeps Buffers in a pool rather than
// allocating a few kilobytes per call for bytes it only hashes. The zero
// Buffer is ready to use; a Buffer is not safe for concurrent use.
type Buffer struct {
	out, scratch []byte
}

// Canonicalize returns the canonical form of the JSON document doc, as
// Canonicalize does, in memory b owns: it is valid until b's next use.
func (b *Buffer) Canonicalize(doc []byte) ([]byte, error) {
	w := writer{in: doc, out: b.out[:0], scratch: b.scratch[:0]}
	err := w.document()
	b.out, b.scratch = w.out[:0], w.scratch[:0]
	if err != nil {
		return nil, err
	}
	return w.out, nil
}

// Cap is how much memory b holds, so a pool can let go of a Buffer that
// grew on an exceptionally large document.
func (b *Buffer) Cap() int { return cap(b.out) + cap(b.scratch) }
