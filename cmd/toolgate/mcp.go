package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/toolgate/toolgate/internal/cli"
	"github.com/toolgate/toolgate/server"
)

// mcpOptions are the flags of "toolgate mcp".
type mcpOptions struct {
	setupFlags
	principal string
}

// mcpCommand is "toolgate mcp".
var mcpCommand = &cli.Command{
	Name:     "mcp",
	Synopsis: "[-config FILE -principal ID] [-offline]",
	Summary:  "speak MCP over stdio (stdin and stdout) to one principal, the gateway in process",
	About: `Speaks the Model Context Protocol over stdio: an MCP client starts
"toolgate mcp" as a subprocess and talks to it on its stdin and stdout.
The gateway runs in this process, for one principal of the config
(-principal), or for the development setup's principal without a config.
stdout carries protocol messages only; logs go to stderr.`,
	Run: runMCP,
}

// runMCP is "toolgate mcp": the gateway in process, speaking MCP over stdin
// and stdout for one principal. stdout carries protocol messages only;
// everything else, logs and mistakes, goes to stderr.
func runMCP(ctx context.Context, c *cli.CLI, cmd *cli.Command, args []string) int {
	fs := c.FlagSet(cmd)
	var opts mcpOptions
	opts.add(fs)
	fs.StringVar(&opts.principal, "principal", "", "call as the config's principal `id` (required with a config)")
	if code, ok := c.Parse(cmd, fs, args); !ok {
		return code
	}
	stdin, stdout, stderr := c.Stdin, c.Stdout, c.Stderr
	if err := opts.finish(fs, c.Getenv); err != nil {
		c.Mistake(cmd, err)
		return exitUsage
	}
	cfg, _, code := configure(opts.configPath, "", stderr)
	if code != exitOK {
		return code
	}
	principal, err := mcpPrincipal(cfg, opts)
	if err != nil {
		fmt.Fprintf(stderr, "toolgate mcp: %v\n", err)
		return exitUsage
	}

	log := slog.New(slog.NewJSONHandler(stderr, nil))
	// Over stdio there is no address to serve metrics on; traces are
	// exported as the server's are, when OTEL_EXPORTER_OTLP_ENDPOINT is set.
	cfg.MetricsListen = ""
	srv, err := server.New(ctx, cfg, &server.Options{Logger: log, Offline: opts.offline, Getenv: c.Getenv})
	if err != nil {
		log.Error("cannot start", "error", err)
		return exitFailed
	}
	defer srv.Close()
	log.Info("serving MCP on stdio", "principal", principal, "storage", cfg.StorageKind(), "offline", opts.offline)
	if err := srv.ServeMCP(ctx, principal, stdin, stdout); err != nil {
		log.Error("stopped with an error", "error", err)
		return exitFailed
	}
	log.Info("stopped")
	return exitOK
}

// mcpPrincipal is who "toolgate mcp" calls as: -principal, which must be
// one of the config's; with no config, the development principal.
func mcpPrincipal(cfg *server.Config, opts mcpOptions) (string, error) {
	if opts.configPath == "" {
		if opts.principal != "" && opts.principal != server.DevPrincipal {
			return "", fmt.Errorf("-principal: the development setup has only %q; give a config for others", server.DevPrincipal)
		}
		return server.DevPrincipal, nil
	}
	if opts.principal == "" {
		return "", errors.New("-principal ID is required with a config")
	}
	if opts.principal == server.PrincipalTemplate {
		return "", errors.New(`-principal: "*" is the template for token subjects; name a principal`)
	}
	if !slices.ContainsFunc(cfg.Principals, func(p server.Principal) bool { return p.ID == opts.principal }) {
		return "", fmt.Errorf("-principal: the config has no principal %q", opts.principal)
	}
	return opts.principal, nil
}
