package loadtest

import (
	"flag"
	"github.com/toolgate/toolgate/internal/testproc"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// Environment variables of the load's size and seed.
const (
	envDuration = "TOOLGATE_LOAD_DURATION"
	envCallers  = "TOOLGATE_LOAD_CALLERS"
	envSeed     = "TOOLGATE_LOAD_SEED"
)

// The short form's defaults, and the bounds of what the variables may ask.
const (
	defaultDuration = 3 * time.Second
	defaultCallers  = 40
	defaultSeed     = 1
	maxDuration     = 5 * time.Minute
	maxCallers      = 1000
	// strictRSSWindow is the shortest window over which the memory rule is
	// enforced: with one sample a second, a third of it holds five.
	strictRSSWindow = 15 * time.Second
)

// settings is the size of a run.
type settings struct {
	duration time.Duration
	callers  int
	seed     uint64
}

// strictRSS reports whether the memory rule is enforced or only logged.
func (s settings) strictRSS() bool {
	return !raceEnabled && s.duration >= strictRSSWindow && runtime.GOOS == "linux"
}

func loadSettings(t *testing.T) settings {
	t.Helper()
	s := settings{duration: defaultDuration, callers: defaultCallers, seed: defaultSeed}
	if v := os.Getenv(envDuration); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Second || d > maxDuration {
			t.Fatalf("%s=%q: want a duration from 1s to %s", envDuration, v, maxDuration)
		}
		s.duration = d
	}
	if v := os.Getenv(envCallers); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxCallers {
			t.Fatalf("%s=%q: want a number from 1 to %d", envCallers, v, maxCallers)
		}
		s.callers = n
	}
	if v := os.Getenv(envSeed); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: want an unsigned integer", envSeed, v)
		}
		s.seed = n
	}
	return s
}

// The server binary, built once for every test.
var binary testproc.Binary

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	binary.Remove()
	os.Exit(code)
}

// setup skips the test where the package does not run, and returns the
// run's settings.
func setup(t *testing.T) settings {
	t.Helper()
	if testing.Short() {
		t.Skip("load tests build and drive the server binary; skipped under -short")
	}
	if runtime.GOOS != "linux" {
		t.Skip("load tests stop the server with SIGTERM and read its memory from /proc")
	}
	return loadSettings(t)
}

// toolgateBinary builds ../cmd/toolgate, with -race when the tests run with
// it (see the package documentation for why).
func toolgateBinary(t *testing.T) string {
	t.Helper()
	path, took := binary.Build(t, "../cmd/toolgate", raceEnabled)
	t.Logf("server binary (race=%v) built in %s", raceEnabled, took.Round(time.Millisecond))
	return path
}
