// Command toolgate is the standalone toolgate server: the gateway's HTTP API,
// and MCP at /mcp, over the built-in tools and the tools of the manifests
// its config names, configured by one JSON file.
//
//	toolgate [-config FILE] [-offline] [-listen ADDR]
//	toolgate mcp [-config FILE -principal ID] [-offline]
//	toolgate mcp pin -config FILE
//	toolgate tools check [-config FILE] MANIFEST...
//
// The config file is named by -config or, failing that, by the
// TOOLGATE_CONFIG environment variable. With neither, the server runs a
// development setup on 127.0.0.1:8080: the in-memory store, live upstreams
// and one fresh API key, printed on stdout with example commands. -offline
// answers every upstream request from recorded provider responses, so the
// whole flow works with no network. -listen overrides the config's address.
//
// Once listening, the server prints "toolgate listening on http://ADDR" on
// stdout (and "toolgate metrics on http://ADDR/metrics" when the config's
// metricsListen serves Prometheus metrics), and logs JSON to stderr (never
// an API key). With OTEL_EXPORTER_OTLP_ENDPOINT set it exports traces over
// OTLP/HTTP. SIGINT or SIGTERM stops
// accepting connections, lets the calls in flight finish, stops the MCP
// servers the config starts (SIGTERM, then SIGKILL after 5 s, with whatever
// they started), and exits 0.
//
// Exit codes: 0 after a clean stop, 1 when the server cannot start or stop
// cleanly, 2 for a mistake in the flags, the config file or a tool manifest
// it names (one line: the manifest's file, the JSON path and the reason).
//
// "toolgate mcp" serves MCP over stdin and stdout to one principal of the
// config (the development principal without one), with the gateway in
// process: stdout carries protocol messages only, logs go to stderr.
//
// "toolgate mcp pin" connects to every MCP server of the config
// ("mcpServers"), writes the digest of each tool it serves to the config's
// pins file, and prints what changed since its last version, tool by tool
// and field by field. With pins, a tool whose definition is not the one
// pinned is served but blocked; a running gateway reads the file again
// when it changes.
//
// "toolgate tools check" validates tool manifests as the server would load
// them and prints "SLUG VERSION DIGEST" for each; it exits 1 if any is bad.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/toolgate/toolgate/registry"
)

// Exit codes.
const (
	exitOK     = 0
	exitFailed = 1
	exitUsage  = 2
)

// retentionInterval is how often expired records are pruned.
const retentionInterval = time.Minute

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop() // from here on, a second signal stops the process at once
	}()
	os.Exit(run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// setupFlags are the flags the server and "toolgate mcp" share: which
// config, and whether upstreams are answered offline.
type setupFlags struct {
	configPath string
	offline    bool
}

// add adds -config and -offline to fs.
func (s *setupFlags) add(fs *flag.FlagSet) {
	fs.StringVar(&s.configPath, "config", "", "read the JSON config `file` (default $TOOLGATE_CONFIG; with neither, a development setup)")
	fs.BoolVar(&s.offline, "offline", false, "answer every upstream request from recorded provider responses (no network)")
}

// parse parses args with fs, refusing stray arguments; the config file
// falls back to $TOOLGATE_CONFIG.
func (s *setupFlags) parse(fs *flag.FlagSet, args []string, getenv func(string) string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (see -h)", fs.Arg(0))
	}
	if s.configPath == "" {
		s.configPath = getenv("TOOLGATE_CONFIG")
	}
	return nil
}

// options are the command-line flags.
type options struct {
	setupFlags
	listen string
}

func parseFlags(args []string, getenv func(string) string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("toolgate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o.add(fs)
	fs.StringVar(&o.listen, "listen", "", "listen on `host:port`, overriding the config (\"127.0.0.1:0\" picks a free port)")
	if err := o.parse(fs, args, getenv); err != nil {
		return o, err
	}
	if o.listen != "" {
		if err := checkListen(o.listen); err != nil {
			return o, fmt.Errorf("-listen: %w", err)
		}
	}
	return o, nil
}

// configure makes the registry and reads the config file at path into it,
// or, with no path, makes the development setup and its key. A mistake is
// reported on stderr and comes back as the exit code to stop with; exitOK
// means go on.
func configure(path string, stderr io.Writer) (*registry.Registry, *Config, string, int) {
	reg, err := newRegistry()
	if err != nil {
		fmt.Fprintf(stderr, "toolgate: %v\n", err)
		return nil, nil, "", exitFailed
	}
	if path == "" {
		cfg, devKey, err := devConfig()
		if err != nil {
			fmt.Fprintf(stderr, "toolgate: %v\n", err)
			return nil, nil, "", exitFailed
		}
		return reg, cfg, devKey, exitOK
	}
	cfg, err := loadConfig(path, reg)
	if err != nil {
		var me *registry.ManifestError
		if errors.As(err, &me) {
			fmt.Fprintf(stderr, "toolgate: %v\n", me) // the manifest's file, path and reason
		} else {
			fmt.Fprintf(stderr, "toolgate: %s: %v\n", path, err)
		}
		return nil, nil, "", exitUsage
	}
	return reg, cfg, "", exitOK
}

// run is the whole server; ctx is done when it should stop. It returns the
// exit code.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "tools" {
		return runTools(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "mcp" {
		return runMCP(ctx, args[1:], getenv, os.Stdin, stdout, stderr)
	}
	opts, err := parseFlags(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "toolgate: %v\n", err)
		return exitUsage
	}
	reg, cfg, devKey, code := configure(opts.configPath, stderr)
	if code != exitOK {
		return code
	}
	if opts.listen != "" {
		cfg.Listen = opts.listen
	}
	if cfg.MetricsListen != "" && cfg.MetricsListen == cfg.Listen && !strings.HasSuffix(cfg.Listen, ":0") {
		fmt.Fprintf(stderr, "toolgate: config: metricsListen: %q is the API's address too; metrics are served on an address of their own\n", cfg.MetricsListen)
		return exitUsage
	}

	log := slog.New(slog.NewJSONHandler(stderr, nil))
	tel, err := newTelemetry(ctx, cfg, getenv)
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
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		a.close()
		log.Error("cannot listen", "error", err)
		return exitFailed
	}
	var metricsLn net.Listener
	if cfg.MetricsListen != "" {
		if metricsLn, err = net.Listen("tcp", cfg.MetricsListen); err != nil {
			ln.Close()
			a.close()
			log.Error("cannot listen for metrics", "error", err)
			return exitFailed
		}
	}
	baseURL := "http://" + ln.Addr().String()
	a.listening(baseURL)
	fmt.Fprintf(stdout, "toolgate listening on %s\n", baseURL)
	if metricsLn != nil {
		fmt.Fprintf(stdout, "toolgate metrics on http://%s/metrics\n", metricsLn.Addr())
	}
	if devKey != "" {
		printDevHelp(stdout, cfg, baseURL, devKey, opts.offline)
	}
	metricsAddr := ""
	if metricsLn != nil {
		metricsAddr = metricsLn.Addr().String()
	}
	log.Info("started", "address", ln.Addr().String(), "storage", cfg.storageKind(), "offline", opts.offline,
		"principals", len(cfg.Principals), "development", devKey != "",
		"metrics", metricsAddr, "tracing", tel.tracing != nil)

	background, stopBackground := context.WithCancel(context.Background())
	go a.gw.RunRetention(background, retentionInterval)
	metricsDone := make(chan struct{})
	if metricsLn != nil {
		go func() {
			defer close(metricsDone)
			tel.serveMetrics(background, metricsLn, log)
		}()
	} else {
		close(metricsDone)
	}
	err = serve(ctx, ln, logRequests(log, a.handler), cfg.upstreamTimeout(), log, a.shutdown)
	stopBackground()
	<-metricsDone
	a.close() // after the drain: calls in flight still write to the store
	if err != nil {
		log.Error("stopped with an error", "error", err)
		return exitFailed
	}
	log.Info("stopped")
	return exitOK
}
