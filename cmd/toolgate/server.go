package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// Server timeouts. A call can spend up to the gateway's upstream deadline
// waiting on its provider, so writing the answer must be allowed a little
// longer than that (writeMargin more); shutdown waits longer still, so that
// a call in flight when the signal comes always finishes.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 15 * time.Second
	writeMargin       = 10 * time.Second
	idleTimeout       = 60 * time.Second
	shutdownTimeout   = 30 * time.Second
	maxHeaderBytes    = 64 << 10
)

// serve answers on ln until ctx is done, then stops accepting connections
// and waits for the requests in flight to finish. upstreamTimeout is the
// gateway's upstream deadline. onShutdown runs when the stop begins, to end
// what would never finish by itself (MCP clients' event streams).
func serve(ctx context.Context, ln net.Listener, h http.Handler, upstreamTimeout time.Duration, log *slog.Logger, onShutdown func()) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      upstreamTimeout + writeMargin,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	srv.RegisterOnShutdown(onShutdown)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	// A call admitted just before the signal may wait its whole upstream
	// deadline.
	drainTimeout := max(shutdownTimeout, upstreamTimeout+writeMargin)
	log.Info("shutting down: finishing requests in flight; a second signal stops at once",
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
