package recorded

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"path"
	"sync"
)

// dataset is one of the embedded data sets, decompressed and decoded the
// first time a request needs it, then shared by every request.
type dataset[T any] struct {
	file   string // under testdata/, gzip-compressed
	decode func([]byte) (T, error)

	once sync.Once
	v    T
}

// get returns the decoded data set. The files are embedded and checked by
// the package's tests, so a failure here is a broken build, and panics.
func (d *dataset[T]) get() T {
	d.once.Do(func() {
		compressed, err := files.ReadFile(path.Join("testdata", d.file))
		if err != nil {
			panic(fmt.Sprintf("recorded: %v", err))
		}
		zr, err := gzip.NewReader(bytes.NewReader(compressed))
		if err != nil {
			panic(fmt.Sprintf("recorded: %s: %v", d.file, err))
		}
		raw, err := io.ReadAll(zr)
		if err != nil {
			panic(fmt.Sprintf("recorded: %s: %v", d.file, err))
		}
		if d.v, err = d.decode(raw); err != nil {
			panic(fmt.Sprintf("recorded: %s: %v", d.file, err))
		}
	})
	return d.v
}
