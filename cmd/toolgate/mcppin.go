package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"

	"github.com/toolgate/toolgate/internal/cli"
	"github.com/toolgate/toolgate/mcpupstream"
)

// mcpPinCommand is "toolgate mcp pin".
var mcpPinCommand = &cli.Command{
	Name:     "mcp pin",
	Synopsis: "-config FILE",
	Summary:  "review and accept what the config's MCP servers serve: pin each tool's digest",
	About: `Connects to every MCP server of the config ("mcpServers"), lists its
tools, writes the digest of each tool served now to the config's pins file
("pins"), and prints what changed since the file's last version: tools
added, removed, and changed with the fields that changed. With pins, a
tool whose definition is not the one pinned is served but blocked; a
running server reads the file again when it changes. A server that cannot
be reached keeps the pins it had, and the exit code is 1.`,
	Run: runPin,
}

// runPin is "toolgate mcp pin".
func runPin(ctx context.Context, c *cli.CLI, cmd *cli.Command, args []string) int {
	fs := c.FlagSet(cmd)
	var flags setupFlags
	fs.StringVar(&flags.configPath, "config", "", "read the JSON config `file` (default $TOOLGATE_CONFIG)")
	if code, ok := c.Parse(cmd, fs, args); !ok {
		return code
	}
	if err := flags.finish(fs, c.Getenv); err != nil {
		c.Mistake(cmd, err)
		return exitUsage
	}
	stdout, stderr := c.Stdout, c.Stderr
	if flags.configPath == "" {
		c.Mistake(cmd, errors.New("-config FILE is required"))
		return exitUsage
	}
	cfg, _, code := configure(flags.configPath, "", stderr)
	if code != exitOK {
		return code
	}
	switch {
	case len(cfg.MCPServers) == 0:
		fmt.Fprintf(stderr, "toolgate mcp pin: %s has no mcpServers to pin\n", flags.configPath)
		return exitUsage
	case cfg.PinsFile == "":
		fmt.Fprintf(stderr, "toolgate mcp pin: %s names no pins file: add \"pins\": \"toolgate.pins.json\"\n", flags.configPath)
		return exitUsage
	}
	old, err := mcpupstream.ReadPins(cfg.PinsFile)
	if err != nil {
		fmt.Fprintf(stderr, "toolgate mcp pin: %v\n", err)
		return exitFailed
	}
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	pins, failed, err := mcpupstream.Inspect(ctx, cfg.MCPUpstreams(), &mcpupstream.Options{Logger: log})
	if err != nil {
		fmt.Fprintf(stderr, "toolgate mcp pin: %v\n", err)
		return exitUsage
	}
	for _, id := range slices.Sorted(maps.Keys(failed)) {
		fmt.Fprintf(stderr, "toolgate mcp pin: MCP server %s: %v; its pins are kept as they were\n", id, failed[id])
		for slug, pin := range old.Tools {
			if strings.HasPrefix(slug, id+".") {
				pins.Tools[slug] = pin
			}
		}
	}
	if err := pins.Write(cfg.PinsFile); err != nil {
		fmt.Fprintf(stderr, "toolgate mcp pin: %v\n", err)
		return exitFailed
	}
	changes := mcpupstream.Diff(old, pins)
	for _, c := range changes {
		switch c.Kind {
		case mcpupstream.Added:
			fmt.Fprintf(stdout, "added    %s %s\n", c.Slug, pins.Tools[c.Slug].Digest)
		case mcpupstream.Removed:
			fmt.Fprintf(stdout, "removed  %s\n", c.Slug)
		case mcpupstream.Changed:
			if len(c.Fields) == 0 {
				// The file's digest was edited, or its manifest: what the
				// server serves is what was pinned, and an empty list of
				// fields would say nothing.
				fmt.Fprintf(stdout, "changed  %s %s: no field differs from the pinned manifest, but the pinned digest %s was not its digest; the pin is rewritten\n",
					c.Slug, pins.Tools[c.Slug].Digest, old.Tools[c.Slug].Digest)
				continue
			}
			fmt.Fprintf(stdout, "changed  %s %s: %s\n", c.Slug, pins.Tools[c.Slug].Digest, strings.Join(c.Fields, ", "))
		}
	}
	fmt.Fprintf(stdout, "%d tools pinned in %s (%d added, %d changed, %d removed)\n", len(pins.Tools), cfg.PinsFile,
		count(changes, mcpupstream.Added), count(changes, mcpupstream.Changed), count(changes, mcpupstream.Removed))
	if len(failed) > 0 {
		return exitFailed
	}
	return exitOK
}

func count(changes []mcpupstream.Change, kind string) int {
	n := 0
	for _, c := range changes {
		if c.Kind == kind {
			n++
		}
	}
	return n
}
