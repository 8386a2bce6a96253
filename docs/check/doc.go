// Package check holds no code of its own: its tests check the Grafana
// dashboard and the Prometheus alerting rules the docs ship against what
// the built server exports on /metrics.
//
// It is a module of its own so that the Prometheus module the tests parse
// rules and queries with, and all it requires, stay out of toolgate's
// go.mod: the server and the library are built with the versions toolgate
// chose, never ones raised for a test. Run its tests from this directory,
// with -count=1: the go tool cannot see that the server they build has
// changed, so a cached result may be stale.
package check
