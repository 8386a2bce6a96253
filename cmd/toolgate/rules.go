package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/toolgate/toolgate/internal/cli"
	"github.com/toolgate/toolgate/server"
)

// rulesTestCommand is "toolgate rules test".
var rulesTestCommand = &cli.Command{
	Name:     "rules test",
	Synopsis: "-config FILE CASES",
	Summary:  "decide a JSON file of cases against the config's rules, as opa test does",
	About: `Decides each case of CASES, a JSON array of {"principal": {"id", "groups", "claims"}, "tool",
"input", "now", "expect": "allow"|"deny"|"ask"|"hide"}, against the config's rules as the server would:
one line per case, then "PASS: n/m" or "FAIL: k/m". Exit 0 when every expectation holds, 1 when
one fails, 2 for a mistake in the config or in CASES.`,
	Run: runRulesTest,
}

// runRulesTest is "toolgate rules test".
func runRulesTest(_ context.Context, c *cli.CLI, cmd *cli.Command, args []string) int {
	fs := c.FlagSet(cmd)
	configPath := fs.String("config", "", "the JSON config `file` whose rules to test")
	if code, ok := c.Parse(cmd, fs, args); !ok {
		return code
	}
	if *configPath == "" || fs.NArg() != 1 {
		c.Mistake(cmd, errors.New("name the config with -config and one file of cases"))
		return exitUsage
	}
	cfg, _, code := configure(*configPath, "", c.Stderr)
	if code != exitOK {
		return code
	}
	passed, err := server.RunRuleCaseFile(cfg, fs.Arg(0), c.Stdout)
	switch {
	case err != nil:
		fmt.Fprintf(c.Stderr, "toolgate: %s: %v\n", fs.Arg(0), err)
		return exitUsage
	case !passed:
		return exitFailed
	}
	return exitOK
}
