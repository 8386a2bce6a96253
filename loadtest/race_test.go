//go:build race

package loadtest

// raceEnabled builds the server binary with -race when the tests run with it.
const raceEnabled = true
