package server

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"syscall"
)

// ListenProblem says why the server cannot listen on addr, and how to
// choose another address: with flag (-listen, -metrics-listen), or with
// the config's field metricsListen when flag is "".
func ListenProblem(addr string, err error, flag string) string {
	how := "choose another address with " + flag
	example := func(a string) string { return flag + " " + a }
	if flag == "" {
		how = "choose another address for the config's metricsListen"
		example = func(a string) string { return a }
	}
	if errors.Is(err, syscall.EADDRINUSE) {
		_, port, _ := net.SplitHostPort(addr)
		msg := fmt.Sprintf("cannot listen on %s: port %s is already in use, by another toolgate or another program; stop it, or %s", addr, port, how)
		if other := nextPort(addr); other != "" {
			msg += fmt.Sprintf(", such as %s, or %s for any free port", example(other), example(anyPort(addr)))
		}
		return msg
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		err = op.Err
	}
	return fmt.Sprintf("cannot listen on %s: %v; %s", addr, err, how)
}

// nextPort is addr with the port after its own, "" when it has none.
func nextPort(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return ""
	}
	n, err := strconv.Atoi(port)
	if err != nil || n <= 0 || n >= 65535 {
		return ""
	}
	return net.JoinHostPort(host, strconv.Itoa(n+1))
}

// anyPort is addr's host with port 0.
func anyPort(addr string) string {
	host, _, _ := net.SplitHostPort(addr)
	return net.JoinHostPort(host, "0")
}
