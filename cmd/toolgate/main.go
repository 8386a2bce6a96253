// Command toolgate is the standalone toolgate server, package
// github.com/toolgate/toolgate/server run from one JSON config file: the
// gateway's HTTP API, MCP at /mcp and the approval pages, over the built-in
// tools (unless the config's "builtinTools" is false) and the tools of the
// manifests and MCP servers it names; and the commands around it.
//
//	toolgate [serve] [-config FILE] [-listen ADDR] [-metrics-listen ADDR] [-offline] [-dev-keys FILE]
//	toolgate COMMAND [arguments]
//
// "toolgate help" lists every command, one line each; each answers -h
// with its usage on stdout and exit 0, and a mistake in its arguments with
// one line on stderr and exit 2.
//
// The config file is named by -config or, failing that, by the
// TOOLGATE_CONFIG environment variable. With neither, the server runs a
// development setup on 127.0.0.1:8080: the in-memory store, live upstreams
// and fresh keys, printed on stdout with example commands (-dev-keys FILE
// keeps them in FILE across restarts). -offline answers every upstream
// request from recorded provider responses, so the whole flow works with no
// network, and counts goal-data's demo provider, answered in process, as
// payment- and endpoint-verified, so that a paid call can be tried.
// -listen overrides the config's address, and -metrics-listen its
// metricsListen, so that instances on one host can share a config file.
//
// Once listening, the server prints "toolgate listening on http://ADDR" on
// stdout (and "toolgate metrics on http://ADDR/metrics" when it serves
// Prometheus metrics), and logs JSON to stderr (never an API key). With
// OTEL_EXPORTER_OTLP_ENDPOINT set it exports traces over OTLP/HTTP.
// SIGHUP, or a change of the config file, reloads its rules, approvers and
// budgets. SIGINT or SIGTERM stops accepting connections, lets the calls in flight finish,
// stops the MCP servers the config starts (SIGTERM, then SIGKILL after 5 s,
// with whatever they started), and exits 0.
//
// Exit codes: 0 after a clean stop, 1 when the server cannot start or stop
// cleanly (an address in use says which, and how to choose another), 2 for
// a mistake in the flags, the config file or a tool manifest it names (one
// line: the manifest's file, the JSON path and the reason).
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

	"github.com/toolgate/toolgate/internal/cli"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/server"
)

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
	fs.BoolVar(&s.offline, "offline", false, "answer every upstream request from recorded provider responses (no network), and count goal-data's demo provider as verified")
}

// finish refuses stray arguments once fs is parsed; the config file falls
// back to $TOOLGATE_CONFIG.
func (s *setupFlags) finish(fs *flag.FlagSet, getenv func(string) string) error {
	if err := cli.NoArgs(fs); err != nil {
		return err
	}
	if s.configPath == "" {
		s.configPath = getenv("TOOLGATE_CONFIG")
	}
	return nil
}

// serveOptions are the server's flags.
type serveOptions struct {
	setupFlags
	listen        string
	metricsListen string
	devKeys       string
}

// newServeOptions adds the server's flags to fs.
func newServeOptions(fs *flag.FlagSet) *serveOptions {
	o := &serveOptions{}
	o.add(fs)
	fs.StringVar(&o.listen, "listen", "", "listen on `host:port`, overriding the config (\"127.0.0.1:0\" picks a free port)")
	fs.StringVar(&o.metricsListen, "metrics-listen", "", "serve Prometheus metrics at /metrics on `host:port`, overriding the config's metricsListen")
	fs.StringVar(&o.devKeys, "dev-keys", "", "keep the development setup's keys in `file` across restarts (made on first use, mode 0600)")
	return o
}

// check checks the flags together, once parsed.
func (o *serveOptions) check(fs *flag.FlagSet, getenv func(string) string) error {
	if err := o.finish(fs, getenv); err != nil {
		return err
	}
	if o.listen != "" {
		if err := server.CheckListen(o.listen); err != nil {
			return fmt.Errorf("-listen: %w", err)
		}
	}
	if o.metricsListen != "" {
		if err := server.CheckListen(o.metricsListen); err != nil {
			return fmt.Errorf("-metrics-listen: %w", err)
		}
	}
	if o.devKeys != "" && o.configPath != "" {
		return errors.New("-dev-keys keeps the development setup's keys, and a config has its own")
	}
	return nil
}

// serveCommand is the server, which toolgate runs without a command too.
var serveCommand = &cli.Command{
	Name:     "serve",
	Synopsis: "[-config FILE] [-listen ADDR] [-metrics-listen ADDR] [-offline] [-dev-keys FILE]",
	Summary:  "run the gateway: its HTTP API, MCP at /mcp and the approval pages (the default)",
	About: `Serves the gateway's HTTP API, MCP over streamable HTTP at /mcp, and the
approval pages at /approvals, configured by one JSON file (-config, or
$TOOLGATE_CONFIG). With neither, a development setup on 127.0.0.1:8080:
memory store, fresh keys printed with example commands. "toolgate" with
flags only is "toolgate serve".`,
	Flags: func(fs *flag.FlagSet) { newServeOptions(fs) },
	Run:   runServe,
}

// configure reads the config file at path or, with no path, makes the
// development setup and its keys (from devKeysFile when given). A mistake
// is reported on stderr and comes back as the exit code to stop with;
// exitOK means go on.
func configure(path, devKeysFile string, stderr io.Writer) (*server.Config, *devSetup, int) {
	if path == "" {
		dev, err := newDevSetup(devKeysFile)
		if err != nil {
			fmt.Fprintf(stderr, "toolgate: %v\n", err)
			return nil, nil, exitUsage
		}
		return server.DevConfig(dev.keys), dev, exitOK
	}
	cfg, err := server.LoadConfig(path)
	if err != nil {
		var me *registry.ManifestError
		if errors.As(err, &me) {
			fmt.Fprintf(stderr, "toolgate: %v\n", me) // the manifest's file, path and reason
		} else {
			fmt.Fprintf(stderr, "toolgate: %s: %v\n", path, err)
		}
		return nil, nil, exitUsage
	}
	return cfg, nil, exitOK
}

// runServe is the server.
func runServe(ctx context.Context, c *cli.CLI, cmd *cli.Command, args []string) int {
	fs := c.FlagSet(cmd)
	opts := newServeOptions(fs)
	if code, ok := c.Parse(cmd, fs, args); !ok {
		return code
	}
	if err := opts.check(fs, c.Getenv); err != nil {
		c.Mistake(cmd, err)
		return exitUsage
	}
	stdout, stderr := c.Stdout, c.Stderr
	cfg, dev, code := configure(opts.configPath, opts.devKeys, stderr)
	if code != exitOK {
		return code
	}
	if opts.listen != "" {
		cfg.Listen = opts.listen
	}
	metricsFlag := ""
	if opts.metricsListen != "" {
		cfg.MetricsListen, metricsFlag = opts.metricsListen, "-metrics-listen"
	}
	if cfg.MetricsListen != "" && cfg.MetricsListen == cfg.Listen && !strings.HasSuffix(cfg.Listen, ":0") {
		what := "config: metricsListen"
		if metricsFlag != "" {
			what = metricsFlag
		}
		fmt.Fprintf(stderr, "toolgate: %s: %q is the API's address too; metrics are served on an address of their own\n", what, cfg.MetricsListen)
		return exitUsage
	}

	log := slog.New(slog.NewJSONHandler(stderr, nil))
	srv, err := server.New(ctx, cfg, &server.Options{Logger: log, Offline: opts.offline, Getenv: c.Getenv})
	if err != nil {
		log.Error("cannot start", "error", err)
		return exitFailed
	}
	defer srv.Close() // after the drain: calls in flight still write to the store
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP) // reloads the config file (server.Reload)
	go srv.ReloadOn(ctx, hup)
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		fmt.Fprintf(stderr, "toolgate: %s\n", cli.ListenProblem(cfg.Listen, err, "-listen"))
		return exitFailed
	}
	var metricsLn net.Listener
	metricsAddr := ""
	if cfg.MetricsListen != "" {
		if metricsLn, err = net.Listen("tcp", cfg.MetricsListen); err != nil {
			ln.Close()
			fmt.Fprintf(stderr, "toolgate: %s\n", cli.ListenProblem(cfg.MetricsListen, err, metricsFlag))
			return exitFailed
		}
		metricsAddr = metricsLn.Addr().String()
	}
	baseURL := "http://" + ln.Addr().String()
	fmt.Fprintf(stdout, "toolgate listening on %s\n", baseURL)
	if metricsLn != nil {
		fmt.Fprintf(stdout, "toolgate metrics on http://%s/metrics\n", metricsAddr)
	}
	if dev != nil {
		dev.printHelp(stdout, baseURL, opts.offline)
	}
	log.Info("started", "address", ln.Addr().String(), "storage", cfg.StorageKind(), "offline", opts.offline,
		"principals", len(cfg.Principals), "development", dev != nil,
		"metrics", metricsAddr, "tracing", c.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || c.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "")
	if err := srv.ServeListeners(ctx, ln, metricsLn); err != nil {
		log.Error("stopped with an error", "error", err)
		return exitFailed
	}
	log.Info("stopped")
	return exitOK
}
