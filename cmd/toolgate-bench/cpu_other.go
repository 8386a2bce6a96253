//go:build !unix

package main

import "time"

// processCPU is not measured off Unix.
func processCPU() time.Duration { return 0 }
