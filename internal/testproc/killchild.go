package testproc

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"sync"
	"testing"
)

// KillChild runs test, a test function of the running test binary, as a
// child process with env added to this one's, reads the JSON lines it
// writes to its standard output (other lines, such as go test's own, are
// skipped), and kills it with SIGKILL as soon as enough, given every line
// read so far, says so, or when it exits. It returns the lines read: what
// the child reported before it was killed. A kill -9 test's child writes
// what it is about to do and what it was told was done; the test then
// checks the store against both.
func KillChild(tb testing.TB, test string, env []string, enough func(line []byte) bool) [][]byte {
	tb.Helper()
	child := exec.Command(os.Args[0], "-test.run", "^"+test+"$", "-test.count", "1")
	child.Env = append(os.Environ(), env...)
	stdout, err := child.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := child.Start(); err != nil {
		tb.Fatal(err)
	}
	var lines [][]byte
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		lines = append(lines, append([]byte(nil), line...))
		if enough(line) {
			break
		}
	}
	if err := child.Process.Kill(); err != nil {
		tb.Fatal(err)
	}
	_ = child.Wait()
	return lines
}

// JSONLines returns a function that writes each value it is given to w as
// one line of JSON, safe for concurrent use: what a KillChild child
// reports from many goroutines.
func JSONLines(w io.Writer) func(v any) {
	var mu sync.Mutex
	enc := json.NewEncoder(w)
	return func(v any) {
		mu.Lock()
		defer mu.Unlock()
		_ = enc.Encode(v)
	}
}
