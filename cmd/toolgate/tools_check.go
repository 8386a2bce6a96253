package main

import (
	"context"
	"fmt"

	"github.com/toolgate/toolgate/internal/cli"
	"github.com/toolgate/toolgate/server"
)

// toolsCheckCommand is "toolgate tools check".
var toolsCheckCommand = &cli.Command{
	Name:     "tools check",
	Synopsis: "[-config FILE] [-strict] MANIFEST...",
	Summary:  "check tool manifests as the server would load them, listing every mistake",
	About: `Checks each manifest as the server would load it, beside the built-in tools,
and prints "SLUG VERSION DIGEST" for each good one on stdout, and each
mistake of each bad one as "toolgate: FILE: PATH: REASON" on stderr.

A manifest's credential is not needed to check it: when the environment
variable or file it names is not set or cannot be read, that is a warning
("toolgate: warning: FILE: PATH: REASON"; the server will refuse the
manifest until it is), unless -strict makes it a mistake.

With -config, the config's "upstreams" apply, as on the server: a
plain-HTTP origin it names is accepted, and the digest is the one the
server serves. Exit 0 when every manifest is good, 1 when any is not,
2 for a mistake in the command line.`,
	Run: runToolsCheck,
}

// runToolsCheck is "toolgate tools check".
func runToolsCheck(_ context.Context, c *cli.CLI, cmd *cli.Command, args []string) int {
	fs := c.FlagSet(cmd)
	configPath := fs.String("config", "", "apply the `file`'s upstreams, as the server would")
	strict := fs.Bool("strict", false, "count a credential that cannot be read as a mistake, not a warning")
	if code, ok := c.Parse(cmd, fs, args); !ok {
		return code
	}
	if fs.NArg() == 0 {
		c.Mistake(cmd, fmt.Errorf("name at least one manifest file"))
		return exitUsage
	}
	checker, err := server.NewManifestChecker(*configPath)
	if err != nil {
		fmt.Fprintf(c.Stderr, "toolgate: %s: %v\n", *configPath, err)
		return exitUsage
	}
	lookupEnv := func(name string) (string, bool) {
		v := c.Getenv(name)
		return v, v != ""
	}

	code := exitOK
	for _, file := range fs.Args() {
		res := checker.Check(file, lookupEnv)
		for _, err := range res.Errors {
			fmt.Fprintf(c.Stderr, "toolgate: %v\n", err)
		}
		if res.Credential != nil {
			if *strict {
				fmt.Fprintf(c.Stderr, "toolgate: %v\n", res.Credential)
				res.Errors = append(res.Errors, res.Credential)
			} else {
				fmt.Fprintf(c.Stderr, "toolgate: warning: %v (the server refuses this manifest until it can read its credential)\n", res.Credential)
			}
		}
		if len(res.Errors) > 0 {
			code = exitFailed
			continue
		}
		fmt.Fprintln(c.Stdout, res.Line)
	}
	return code
}
