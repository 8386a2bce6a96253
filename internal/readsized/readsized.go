// Package readsized reads a body whose length was declared (a request's or
// a response's Content-Length) into a buffer allocated once at that length,
// rather than one io.ReadAll grows from 512 bytes, with a copy at each
// doubling. The declared length is trusted only for the allocation: the
// bytes returned are whatever the reader gives, as io.ReadAll returns them.
package readsized

import "io"

// ReadAll reads r to its end, as io.ReadAll does. When length, the length
// the body declared, is between 0 and max, the buffer is allocated at that
// length once; a wrong length costs only a regrowth. A length beyond max,
// or none (-1), is not trusted with an allocation: the read grows as
// io.ReadAll's does. ReadAll does not cap what it reads; wrap r in an
// io.LimitReader or http.MaxBytesReader for that.
func ReadAll(r io.Reader, length, max int64) ([]byte, error) {
	if length < 0 || length > max {
		return io.ReadAll(r)
	}
	buf := make([]byte, 0, length+1) // +1: room to read the EOF without growing
	for {
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
	}
}
