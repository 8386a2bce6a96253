//go:build unix

package testproc

import (
	"syscall"
	"time"
)

// ProcessCPU is the CPU time the process has used so far, user and system.
// Where other work shares the machine, CPU time per operation is a steadier
// figure to compare by than wall time.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
