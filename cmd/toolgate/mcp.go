package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/mcpserver"
)

// mcpOptions are the flags of "toolgate mcp".
type mcpOptions struct {
	setupFlags
	principal string
}

// mcpCommand is "toolgate mcp".
var mcpCommand = &command{
	name:     "mcp",
	synopsis: "[-config FILE -principal ID] [-offline]",
	summary:  "speak MCP over stdio (stdin and stdout) to one principal, the gateway in process",
	about: `Speaks the Model Context Protocol over stdio: an MCP client starts
"toolgate mcp" as a subprocess and talks to it on its stdin and stdout.
The gateway runs in this process, for one principal of the config
(-principal), or for the development setup's principal without a config.
stdout carries protocol messages only; logs go to stderr.`,
	run: runMCP,
}

// runMCP is "toolgate mcp": the gateway in process, speaking MCP over stdin
// and stdout for one principal. stdout carries protocol messages only;
// everything else, logs and mistakes, goes to stderr.
func runMCP(ctx context.Context, c *cli, cmd *command, args []string) int {
	fs := c.flagSet(cmd)
	var opts mcpOptions
	opts.add(fs)
	fs.StringVar(&opts.principal, "principal", "", "call as the config's principal `id` (required with a config)")
	if code, ok := c.parse(cmd, fs, args); !ok {
		return code
	}
	stdin, stdout, stderr := c.stdin, c.stdout, c.stderr
	if err := opts.finish(fs, c.getenv); err != nil {
		c.mistake(cmd, err)
		return exitUsage
	}
	reg, cfg, _, code := configure(opts.configPath, "", stderr)
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
	noMetrics := *cfg
	noMetrics.MetricsListen = ""
	tel, err := newTelemetry(ctx, &noMetrics, c.getenv)
	if err != nil {
		log.Error("cannot start tracing", "error", err)
		return exitFailed
	}
	defer tel.close(log)
	a, err := build(ctx, cfg, reg, opts.offline, tel, log)
	if err != nil {
		log.Error("cannot start", "error", err)
		return exitFailed
	}
	defer a.close()
	// Over stdio there is no request address: the approval pages of
	// approver-mode calls are linked only under the configured publicUrl.
	srv, err := mcpserver.NewServer(a.gw, principal, tel.mcpOptions(&mcpserver.Options{Logger: log, PublicURL: cfg.Approvals.PublicURL, Sealing: a.sealing}))
	if err != nil {
		log.Error("cannot start", "error", err)
		return exitFailed
	}
	defer srv.Close()
	log.Info("serving MCP on stdio", "principal", principal, "storage", cfg.storageKind(), "offline", opts.offline)
	logGeneratedReceiptKey(log, a.generatedReceiptKey)

	retention, stopRetention := context.WithCancel(context.Background())
	defer stopRetention()
	go a.gw.RunRetention(retention, retentionInterval)
	transport := &mcp.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{stdout}}
	if err := srv.Run(ctx, transport); err != nil && !errors.Is(err, io.EOF) {
		log.Error("stopped with an error", "error", err)
		return exitFailed
	}
	log.Info("stopped")
	return exitOK
}

// mcpPrincipal is who "toolgate mcp" calls as: -principal, which must be
// one of the config's; with no config, the development principal.
func mcpPrincipal(cfg *Config, opts mcpOptions) (string, error) {
	if opts.configPath == "" {
		if opts.principal != "" && opts.principal != devPrincipal {
			return "", fmt.Errorf("-principal: the development setup has only %q; give a config for others", devPrincipal)
		}
		return devPrincipal, nil
	}
	if opts.principal == "" {
		return "", errors.New("-principal ID is required with a config")
	}
	if opts.principal == templateID {
		return "", errors.New(`-principal: "*" is the template for token subjects; name a principal`)
	}
	if !slices.ContainsFunc(cfg.Principals, func(p Principal) bool { return p.ID == opts.principal }) {
		return "", fmt.Errorf("-principal: the config has no principal %q", opts.principal)
	}
	return opts.principal, nil
}

// nopWriteCloser leaves closing stdout to the process's exit.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
