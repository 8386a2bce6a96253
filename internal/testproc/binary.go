package testproc

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// Binary is a Go program built once per test process and shared by every
// test that runs it. Call Remove from TestMain when the tests are done.
type Binary struct {
	once sync.Once
	dir  string
	path string
	took time.Duration
	err  error
}

// Build builds the main package at pkgDir (relative to the test's package)
// with the go tool, with -race when race is set so the tests race-check the
// program too, and returns the executable's path and how long the build
// took. Later calls return the first build's result.
func (b *Binary) Build(tb testing.TB, pkgDir string, race bool) (string, time.Duration) {
	tb.Helper()
	b.once.Do(func() {
		goTool, err := exec.LookPath("go")
		if err != nil {
			b.err = err
			return
		}
		if b.dir, b.err = os.MkdirTemp("", "toolgate-bin-"); b.err != nil {
			return
		}
		abs, err := filepath.Abs(pkgDir)
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(b.dir, filepath.Base(abs))
		args := []string{"build", "-o", b.path}
		if race {
			args = append(args, "-race")
		}
		start := time.Now()
		out, err := exec.Command(goTool, append(args, pkgDir)...).CombinedOutput()
		if err != nil {
			b.err = errors.New("go build: " + err.Error() + "\n" + string(out))
			return
		}
		b.took = time.Since(start)
	})
	if b.err != nil {
		tb.Fatal(b.err)
	}
	return b.path, b.took
}

// Remove deletes the built program.
func (b *Binary) Remove() {
	if b.dir != "" {
		os.RemoveAll(b.dir)
	}
}
