//go:build !unix

package testproc

import "time"

// ProcessCPU is not measured off Unix: it is always zero.
func ProcessCPU() time.Duration { return 0 }
