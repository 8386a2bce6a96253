//go:build race

package main

// raceEnabled builds the server binary with -race when the tests run with it.
const raceEnabled = true
