//go:build !unix

package mcpupstream

import (
	"os"
	"os/exec"
)

type signal int

const (
	sigTerm signal = iota
	sigKill
)

// setProcessGroup does nothing where there are no process groups.
func setProcessGroup(*exec.Cmd) {}

// signalGroup kills p: without process groups or SIGTERM there is no
// gentler way, and nothing else to reach.
func signalGroup(p *os.Process, _ signal) { _ = p.Kill() }
