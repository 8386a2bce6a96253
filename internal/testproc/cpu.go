package testproc

import "testing"

// ReportCPU starts counting the process's CPU time and returns what
// reports it per operation, as cpu-ns/op, when the benchmark ends. On a
// machine shared with other work, wall time per operation depends on how
// much CPU the benchmark was given; CPU time per operation much less so,
// which makes it the steadier figure to compare two benchmarks of one run
// by. It is left out where ProcessCPU cannot tell.
func ReportCPU(b *testing.B) func() {
	start := ProcessCPU()
	return func() {
		if end := ProcessCPU(); end > 0 && b.N > 0 {
			b.ReportMetric(float64(end-start)/float64(b.N), "cpu-ns/op")
		}
	}
}
