package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/toolgate/toolgate/internal/testproc"
	"net"
	"net/http"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/apikey"
	"github.com/toolgate/toolgate/httpapi"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/storage/memory"
	"github.com/toolgate/toolgate/storage/postgres"
	"github.com/toolgate/toolgate/storage/sqlite"
	"github.com/toolgate/toolgate/tools"
	"github.com/toolgate/toolgate/tools/recorded"
	"github.com/toolgate/toolgate/upstream"
)

// server is an HTTP server on a free loopback port.
type server struct {
	url   string
	close func()
}

// Its goroutines carry the profiler label server=name (they inherit it from
// the one that serves), so that a CPU profile tells the stub's work from the
// gateway's: go tool pprof -tagfocus server=gateway.
func listen(name string, h http.Handler) (*server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go pprof.Do(context.Background(), pprof.Labels("server", name), func(context.Context) { _ = srv.Serve(ln) })
	return &server{url: "http://" + ln.Addr().String(), close: func() { _ = srv.Close() }}, nil
}

// startStub serves the recorded ten-event USGS body on every path, as the
// provider would for the gateway's query.
func startStub() (*server, error) {
	body := recorded.Body(recorded.USGSTenFeatures)
	length := strconv.Itoa(len(body))
	return listen("stub", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", length)
		_, _ = w.Write(body)
	}))
}

// gatewayServer is the gateway's HTTP API with one API key per client.
type gatewayServer struct {
	url   string
	keys  []string // by client
	close func()   // idempotent
	// work counts the database's work on PostgreSQL, nil otherwise; it is
	// complete once close has run.
	work *dbWork
	// batches adds up the store's batches: none for a store that sends none.
	batches *batchSizes
}

// startGateway serves a gateway over the named store ("memory" or a
// PostgreSQL URL) whose earthquake-search forwards to stubURL.
func startGateway(ctx context.Context, stubURL, store string, clients int) (*gatewayServer, error) {
	st, work, closeStore, err := openStore(ctx, store, clients)
	if err != nil {
		return nil, err
	}
	reg := registry.New()
	if err := reg.Register(tools.EarthquakeSearch()); err != nil {
		closeStore()
		return nil, err
	}
	if err := reg.SetOrigin("earthquake-search", stubURL); err != nil {
		closeStore()
		return nil, err
	}
	transport := upstream.NewTransport()
	transport.MaxIdleConnsPerHost = max(transport.MaxIdleConnsPerHost, clients)
	gw, err := toolgate.New(st, &toolgate.Config{Registry: reg, Transport: transport, SpendControls: testproc.RaisedLimits{}})
	if err != nil {
		closeStore()
		return nil, err
	}
	keys := apikey.NewKeyStore()
	var secret [8]byte
	_, _ = rand.Read(secret[:])
	g := &gatewayServer{}
	for c := 0; c < clients; c++ {
		key := "tg_bench_" + strconv.Itoa(c) + "_" + hex.EncodeToString(secret[:])
		if err := keys.AddKey("client-"+strconv.Itoa(c), key); err != nil {
			closeStore()
			return nil, err
		}
		g.keys = append(g.keys, key)
	}
	srv, err := listen("gateway", httpapi.NewHandler(gw, &httpapi.Options{Authenticator: keys}))
	if err != nil {
		closeStore()
		return nil, err
	}
	g.url = srv.url
	g.work = work
	g.batches = observeBatches(st)
	g.close = sync.OnceFunc(func() {
		srv.close()
		transport.CloseIdleConnections()
		closeStore()
	})
	return g, nil
}

// openStore opens the memory store, a new SQLite file (removed on close),
// or a fresh schema on PostgreSQL with a connection per client (unless the
// URL sets pool_max_conns), dropped on close. On PostgreSQL it also returns
// the dbWork that counts what the database did for the phase, complete
// once close has run.
func openStore(ctx context.Context, store string, clients int) (storage.Store, *dbWork, func(), error) {
	switch storeKind(store) {
	case "memory":
		return memory.New(), nil, func() {}, nil
	case "sqlite":
		st, closeStore, err := openSQLite(ctx, strings.TrimPrefix(store, "sqlite:"))
		return st, nil, closeStore, err
	}
	return openPostgres(ctx, store, clients)
}

// openPostgres creates a fresh schema, then opens the measured pool on it.
// The schema is made on a connection of its own, closed before the first
// reading of the statistics, so that creating it is not counted as the
// pairs' work.
func openPostgres(ctx context.Context, url string, clients int) (storage.Store, *dbWork, func(), error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("-store: %w", err)
	}
	if !strings.Contains(url, "pool_max_conns") {
		cfg.MaxConns = int32(clients)
	}
	var r [6]byte
	_, _ = rand.Read(r[:])
	suffix := hex.EncodeToString(r[:])
	schema := "toolgate_bench_" + suffix
	app := "toolgate-bench-" + suffix
	work, err := openDBWork(ctx, url, schema, app)
	if err != nil {
		return nil, nil, nil, err
	}
	drop := func() error {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_, err := work.stats.Exec(dctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
		return err
	}
	fail := func(err error) (storage.Store, *dbWork, func(), error) {
		err = errors.Join(err, drop())
		work.close()
		return nil, nil, nil, err
	}

	// The schema first, on a connection that is gone before counting starts.
	migrateCfg := cfg.Copy()
	migrateCfg.MaxConns = 1
	migrateCfg.ConnConfig.RuntimeParams["application_name"] = app
	migratePool, err := pgxpool.NewWithConfig(ctx, migrateCfg)
	if err != nil {
		return fail(err)
	}
	_, err = postgres.New(ctx, migratePool, &postgres.Config{Schema: schema})
	migratePool.Close()
	if err != nil {
		return fail(err)
	}
	if err := work.waitForBackends(ctx); err != nil {
		return fail(err)
	}
	if work.before, err = work.snapshot(ctx); err != nil {
		return fail(err)
	}

	cfg.ConnConfig.RuntimeParams["application_name"] = app
	cfg.ConnConfig.DialFunc = work.wire.dial
	cfg.ConnConfig.Tracer = &work.wire
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return fail(err)
	}
	st, err := postgres.New(ctx, pool, &postgres.Config{Schema: schema})
	if err != nil {
		pool.Close()
		return fail(err)
	}
	work.store = &timedStore{Store: st}
	closeStore := func() {
		// While the backends are connected: their CPU, and the pairs.
		work.readServerCPU(ctx)
		countErr := work.countPairs(ctx)
		pool.Close()
		err := work.waitForBackends(ctx)
		if err == nil {
			work.after, err = work.snapshot(ctx)
		}
		if err = errors.Join(countErr, err); err != nil {
			fmt.Fprintln(os.Stderr, "toolgate-bench: database work not counted:", err)
			work.pairs = 0
		}
		_ = drop()
		work.close()
	}
	return work.store, work, closeStore, nil
}

// openSQLite opens a new SQLite file at path for the benchmark, and removes
// it, with its write-ahead log, on close. An existing file is refused rather
// than filled with benchmark calls and then deleted.
func openSQLite(ctx context.Context, path string) (storage.Store, func(), error) {
	if _, err := os.Stat(path); err == nil {
		return nil, nil, fmt.Errorf("-store sqlite:%s: the file exists; give the path of a new file", path)
	}
	st, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		return nil, nil, err
	}
	remove := func() {
		for _, suffix := range []string{"", "-wal", "-shm"} {
			_ = os.Remove(path + suffix)
		}
	}
	return st, func() {
		_ = st.Close()
		remove()
	}, nil
}
