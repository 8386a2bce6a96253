package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/mcpserver"
	"github.com/toolgate/toolgate/receipt"
	"github.com/toolgate/toolgate/sealing"
)

// Server timeouts. A call can spend up to the gateway's upstream deadline
// waiting on its provider, so writing the answer must be allowed a little
// longer than that (writeMargin more); shutdown waits longer still, so that
// a call in flight when the stop comes always finishes.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 15 * time.Second
	writeMargin       = 10 * time.Second
	idleTimeout       = 60 * time.Second
	shutdownTimeout   = 30 * time.Second
	maxHeaderBytes    = 64 << 10
)

// RetentionInterval is how often a Server prunes expired records.
const RetentionInterval = time.Minute

// Options are a Server's settings that are not the config file's. nil
// Options are the zero Options.
type Options struct {
	// Logger gets the server's logs: a line per request, per finished call
	// and per event of note. nil discards them.
	Logger *slog.Logger
	// Offline answers every upstream request from recorded provider
	// responses, so the whole flow works with no network; tools pointed
	// elsewhere by the config's upstreams keep their origin (and so their
	// manifest digest), and the recordings answer them by path. goal-data's
	// demo provider is then answered in process and trusted as payment- and
	// endpoint-verified, so that a paid call can be tried; the config's
	// "trust" still has the last word.
	Offline bool
	// Getenv reads the environment: OTEL_EXPORTER_OTLP_ENDPOINT (or
	// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) turns on exporting traces over
	// OTLP/HTTP, and the OTEL_BSP_* variables tune their batches. nil is
	// os.Getenv.
	Getenv func(string) string
	// ConfigPollInterval is how often the config file, when the config
	// was loaded from one, is read to be reloaded once it changed
	// (Server.Reload); 0 is DefaultConfigPollInterval, negative never.
	ConfigPollInterval time.Duration
}

// Server is the whole toolgate server of one config, in process: the
// gateway over the configured store, its HTTP API, MCP at /mcp and the
// approval pages on one handler, the MCP servers it gates, its webhooks,
// metrics and traces. New starts it; Serve (or Handler, on a server of
// the embedder's) answers requests; Close stops it.
type Server struct {
	cfg     *Config
	log     *slog.Logger
	gw      *toolgate.Gateway
	handler http.Handler // the API, /mcp and the pages, each request logged
	tel     *telemetry
	// endStreams ends what a drain cannot wait for: MCP clients' event
	// streams.
	endStreams func()
	// release waits for budget checks, stops the MCP servers and the
	// webhook sender, and releases the store.
	release func()
	// listening tells the webhook sender the address the server is
	// served at, once known.
	listening func(baseURL string)
	// sealing are the fleet's keys, for state handed out and trusted
	// again by any instance.
	sealing *sealing.Keys
	// generatedReceiptKey signs receipts when none is configured; nil
	// when one is. It is logged once the server serves.
	generatedReceiptKey *receipt.Signer
	logKeyOnce          sync.Once
	// reloading is what a reload of the config changes (reload.go).
	reloading reloader

	stopRetention context.CancelFunc
	retentionDone chan struct{}
	closeOnce     sync.Once
}

// Gateway is the server's gateway, for calls in process.
func (s *Server) Gateway() *toolgate.Gateway { return s.gw }

// Handler answers the HTTP API, MCP over streamable HTTP at /mcp and the
// approval pages at /approvals, logging a line per request (never a key).
// It is what Serve serves; an embedder may mount it on a server of its
// own instead, then best with WriteTimeout longer than the config's
// upstreamTimeout, as Serve's is.
func (s *Server) Handler() http.Handler { return s.handler }

// Serve answers on ln until ctx is done, then stops accepting connections
// and lets the requests in flight finish, for as long as a call may wait
// on its provider; MCP clients' event streams are ended. The first Serve
// gives the webhooks' approveUrl its address, http:// and ln's, unless
// the config's approvals.publicUrl does. It returns nil after a clean
// stop. The server is not closed: Close it once every Serve has returned.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	s.listening("http://" + ln.Addr().String())
	s.logGeneratedReceiptKey()
	upstreamTimeout := s.cfg.upstreamTimeout()
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      upstreamTimeout + writeMargin,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	srv.RegisterOnShutdown(s.endStreams)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	// A call admitted just before the stop may wait its whole upstream
	// deadline.
	drainTimeout := max(shutdownTimeout, upstreamTimeout+writeMargin)
	s.log.Info("shutting down: finishing requests in flight; a second signal stops at once",
		"timeout", drainTimeout.String())
	drain, cancel := context.WithTimeout(context.Background(), drainTimeout)
	defer cancel()
	if err := srv.Shutdown(drain); err != nil {
		_ = srv.Close()
		return fmt.Errorf("shutdown: requests still running after %s: %w", drainTimeout, err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

// ServeMetrics answers GET /metrics on ln, and nothing else, until ctx is
// done. It is an error when the config has no metricsListen, since then
// no metrics are gathered.
func (s *Server) ServeMetrics(ctx context.Context, ln net.Listener) error {
	if s.tel.metrics == nil {
		return errors.New("metrics are gathered only with metricsListen in the config")
	}
	return s.tel.serveMetrics(ctx, ln, s.log)
}

// ListenAndServe listens on the config's listen address (127.0.0.1:8080
// when it has none), and on its metricsListen when it has one, and serves there (Serve, ServeMetrics)
// until ctx is done and the requests in flight have finished.
func (s *Server) ListenAndServe(ctx context.Context) error {
	addr := s.cfg.Listen
	if addr == "" {
		addr = defaultListen
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	var metrics net.Listener
	if s.cfg.MetricsListen != "" {
		if metrics, err = net.Listen("tcp", s.cfg.MetricsListen); err != nil {
			ln.Close()
			return err
		}
	}
	return s.ServeListeners(ctx, ln, metrics)
}

// ServeListeners is ListenAndServe on listeners of the caller's: Serve on
// ln and, when metrics is not nil, ServeMetrics on metrics until Serve has
// returned. A failure to serve metrics is logged, and stops nothing else.
func (s *Server) ServeListeners(ctx context.Context, ln, metrics net.Listener) error {
	if metrics == nil {
		return s.Serve(ctx, ln)
	}
	background, stop := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.ServeMetrics(background, metrics)
	}()
	err := s.Serve(ctx, ln)
	stop()
	<-done
	return err
}

// ServeMCP speaks MCP over in and out (a client's stdio) to one principal
// of the config until ctx is done or in ends. Over stdio there is no
// request address: the approval pages of approver-mode calls are linked
// only under the config's approvals.publicUrl.
func (s *Server) ServeMCP(ctx context.Context, principal string, in io.Reader, out io.Writer) error {
	srv, err := mcpserver.NewServer(s.gw, principal, s.tel.mcpOptions(&mcpserver.Options{
		Logger: s.log, PublicURL: s.cfg.Approvals.PublicURL, Sealing: s.sealing}))
	if err != nil {
		return err
	}
	defer srv.Close()
	s.logGeneratedReceiptKey()
	transport := &mcp.IOTransport{Reader: io.NopCloser(in), Writer: nopWriteCloser{out}}
	if err := srv.Run(ctx, transport); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

// nopWriteCloser leaves closing the output to its owner.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// Close stops what New started: the config file's watch, the pruning, the MCP servers (SIGTERM,
// then SIGKILL after 5 s, with whatever they started), the webhook
// deliveries in progress (up to 5 s; what is not delivered stays in the
// store for the next instance), the store, and the traces' exporter, after
// sending the spans it holds. Call it once the requests are over: a call
// in flight still writes to the store. It always returns nil.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.stopWatching()
		s.stopRetention()
		<-s.retentionDone
		s.release()
		s.tel.close(s.log)
	})
	return nil
}

// logGeneratedReceiptKey says, once the server serves, that its receipts
// are signed with a development key, and which: its receipts verify only
// while this public key is kept.
func (s *Server) logGeneratedReceiptKey() {
	s.logKeyOnce.Do(func() { logGeneratedReceiptKey(s.log, s.generatedReceiptKey) })
}

// getenv is opts.Getenv, or os.Getenv.
func (o *Options) getenv() func(string) string {
	if o.Getenv != nil {
		return o.Getenv
	}
	return os.Getenv
}
