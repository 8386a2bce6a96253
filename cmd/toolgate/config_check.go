package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/toolgate/toolgate/internal/cli"
)

// configCheckCommand is "toolgate config check".
var configCheckCommand = &cli.Command{
	Name:     "config check",
	Synopsis: "[-config FILE]",
	Summary:  "load and check a config file as the server would, starting nothing",
	About: `Loads and checks the config file (-config, or $TOOLGATE_CONFIG) as the server
does at start, and before a reload, with no store opened and no network:
"config ok: sha256 HASH" (its toolgate_config_info) and exit 0, or the
line the server would stop with and exit 2.`,
	Run: runConfigCheck,
}

func runConfigCheck(_ context.Context, c *cli.CLI, cmd *cli.Command, args []string) int {
	fs := c.FlagSet(cmd)
	flags := &setupFlags{}
	fs.StringVar(&flags.configPath, "config", "", "check the JSON config `file` (default $TOOLGATE_CONFIG)")
	if code, ok := c.Parse(cmd, fs, args); !ok {
		return code
	}
	if err := flags.finish(fs, c.Getenv); err != nil || flags.configPath == "" {
		c.Mistake(cmd, cmp.Or(err, errors.New("name the config file with -config")))
		return exitUsage
	}
	cfg, _, code := configure(flags.configPath, "", c.Stderr)
	if code == exitOK {
		fmt.Fprintf(c.Stdout, "config ok: sha256 %.12s\n", cfg.SHA256())
	}
	return code
}
