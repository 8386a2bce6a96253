package main

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/toolgate/toolgate/internal/cli"
)

// version is toolgate's version when the build sets it:
//
//	go build -ldflags "-X main.version=v1.2.3" ./cmd/toolgate
//
// Otherwise it is read from the build: the module's version when installed
// with go install, else the commit the binary was built from.
var version string

// versionCommand is "toolgate version", also -version and --version.
var versionCommand = &cli.Command{
	Name:     "version",
	Summary:  "print toolgate's version",
	Synopsis: "",
	Run: func(_ context.Context, c *cli.CLI, cmd *cli.Command, args []string) int {
		fs := c.FlagSet(cmd)
		if code, ok := c.Parse(cmd, fs, args); !ok {
			return code
		}
		if err := cli.NoArgs(fs); err != nil {
			c.Mistake(cmd, err)
			return exitUsage
		}
		fmt.Fprintln(c.Stdout, "toolgate "+versionString())
		return exitOK
	},
}

// versionString is the version, then what the build says of itself: the
// commit (marked "modified" when built with changes not committed) and
// the Go version.
func versionString() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		if version != "" {
			return version
		}
		return "(unknown)"
	}
	v := version
	if v == "" {
		v = info.Main.Version
	}
	if v == "" {
		v = "(devel)"
	}
	var revision, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	parts := []string{v}
	if revision != "" && !strings.Contains(v, revision[:min(12, len(revision))]) {
		r := revision[:min(12, len(revision))]
		if modified == "true" {
			r += " (modified)"
		}
		parts = append(parts, r)
	}
	return strings.Join(append(parts, info.GoVersion), " ")
}
