package loadtest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/toolgate/toolgate/internal/testproc"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Bounds on the server process.
const (
	startTimeout = 60 * time.Second
	// exitTimeout covers the server's own drain limit (30 s) and a margin.
	exitTimeout = 45 * time.Second
)

// server is a running server binary. Its stderr (the JSON log, one line
// per request) goes to a file, so a long run does not hold it in memory.
type server struct {
	t      *testing.T
	name   string
	cmd    *exec.Cmd
	base   string // http://127.0.0.1:PORT
	stdout *testproc.SyncBuffer
	logs   string        // path of the stderr file
	exited chan struct{} // closed once the process has exited
	err    error         // from Wait, set before exited is closed
}

// startServer runs the binary with the config at path and waits for it to
// listen. Only what the test passes configures it: TOOLGATE_CONFIG is
// dropped from the environment.
func startServer(t *testing.T, bin, name, configPath string) *server {
	t.Helper()
	logs := filepath.Join(t.TempDir(), name+".log")
	stderr, err := os.Create(logs)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-config", configPath)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TOOLGATE_CONFIG=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	s := &server{t: t, name: name, cmd: cmd, stdout: &testproc.SyncBuffer{}, logs: logs, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = s.stdout, stderr
	if err := cmd.Start(); err != nil {
		stderr.Close()
		t.Fatal(err)
	}
	go func() {
		s.err = cmd.Wait()
		stderr.Close()
		close(s.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-s.exited:
		default:
			_ = cmd.Process.Kill() // this test's own process, by its handle
			<-s.exited
		}
	})
	s.base = s.waitListening()
	return s
}

// waitListening reads the address from "toolgate listening on URL" and
// checks that it is on the loopback interface.
func (s *server) waitListening() string {
	s.t.Helper()
	const prefix = "toolgate listening on "
	deadline := time.Now().Add(startTimeout)
	for {
		lines := strings.Split(s.stdout.String(), "\n")
		for _, line := range lines[:len(lines)-1] { // the last may be partly written
			if rest, ok := strings.CutPrefix(strings.TrimSpace(line), prefix); ok {
				u, err := url.Parse(rest)
				if err != nil || u.Scheme != "http" || u.Hostname() != "127.0.0.1" {
					s.t.Fatalf("%s listens on %q, not on 127.0.0.1", s.name, rest)
				}
				return rest
			}
		}
		select {
		case <-s.exited:
			s.t.Fatalf("%s exited (%v) before listening; log:\n%s", s.name, s.err, s.tail())
		default:
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("%s did not listen within %s", s.name, startTimeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *server) pid() int { return s.cmd.Process.Pid }

// terminate sends SIGTERM.
func (s *server) terminate() {
	s.t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		s.t.Fatalf("SIGTERM %s: %v", s.name, err)
	}
}

// wait waits for the process to exit and returns its exit code.
func (s *server) wait(timeout time.Duration) int {
	s.t.Helper()
	select {
	case <-s.exited:
	case <-time.After(timeout):
		s.t.Fatalf("%s did not exit within %s", s.name, timeout)
	}
	if s.err == nil {
		return 0
	}
	if exit, ok := s.err.(*exec.ExitError); ok {
		return exit.ExitCode()
	}
	s.t.Fatalf("%s: %v", s.name, s.err)
	return -1
}

// stop sends SIGTERM and requires a clean exit.
func (s *server) stop() {
	s.t.Helper()
	s.terminate()
	if code := s.wait(exitTimeout); code != 0 {
		s.t.Errorf("%s exited %d after SIGTERM; log tail:\n%s", s.name, code, s.tail())
	}
}

// tail returns the last lines of the log, for failure messages.
func (s *server) tail() string {
	b, _ := os.ReadFile(s.logs)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return strings.Join(lines, "\n")
}

// logSummary is what the server's log says about a run.
type logSummary struct {
	lines    int
	requests map[int]int // status -> request lines
	errors   []string    // ERROR-level lines other than request lines, first few
	nErrors  int
	stopped  bool // the "stopped" line of a clean exit
	notJSON  int
}

// readLogs summarizes the log written so far.
func (s *server) readLogs() logSummary {
	s.t.Helper()
	f, err := os.Open(s.logs)
	if err != nil {
		s.t.Fatal(err)
	}
	defer f.Close()
	sum := logSummary{requests: map[int]int{}}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		sum.lines++
		var rec struct {
			Level  string `json:"level"`
			Msg    string `json:"msg"`
			Status int    `json:"status"`
		}
		if err := json.Unmarshal(line, &rec); err != nil {
			sum.notJSON++
			continue
		}
		switch {
		case rec.Msg == "request":
			sum.requests[rec.Status]++
		case rec.Level == "ERROR":
			sum.nErrors++
			if len(sum.errors) < 5 {
				sum.errors = append(sum.errors, string(line))
			}
		case rec.Msg == "stopped":
			sum.stopped = true
		}
	}
	if err := sc.Err(); err != nil {
		s.t.Fatalf("read %s: %v", s.logs, err)
	}
	return sum
}

// server5xx counts request lines the server logged with a 5xx status.
func (l logSummary) server5xx() int {
	n := 0
	for status, count := range l.requests {
		if status >= 500 {
			n += count
		}
	}
	return n
}

// readRSS returns the resident set of process pid in KiB, from
// /proc/PID/status.
func readRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			fields := strings.Fields(rest)
			if len(fields) == 2 && fields[1] == "kB" {
				return strconv.ParseInt(fields[0], 10, 64)
			}
		}
	}
	return 0, fmt.Errorf("no VmRSS line in /proc/%d/status", pid)
}
