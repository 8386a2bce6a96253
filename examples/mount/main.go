// Command mount shows the toolgate HTTP API inside an existing net/http
// server: the application keeps its own routes (GET /, GET /status) and its
// own middleware (a request log and a response header), and the gateway is
// one more handler on its mux, under /gateway/.
//
//	go run ./examples/mount
//	curl -s http://127.0.0.1:8081/gateway/v1/registry/tools
//
// Upstream answers come from recorded provider responses (package
// tools/recorded), so it runs with no network.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/apikey"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/storage/memory"
	"github.com/toolgate/toolgate/toolgatehttp"
	"github.com/toolgate/toolgate/tools"
	"github.com/toolgate/toolgate/tools/recorded"
)

// demoKey is the example's one API key, for principal "demo". A real
// application plugs its own users into toolgatehttp.Options.Authenticator.
const demoKey = "tg_demo_mount"

func main() {
	addr := flag.String("listen", "127.0.0.1:8081", "listen on `host:port`")
	flag.Parse()

	ctx := context.Background()
	app, err := newApp(ctx, os.Stderr)
	if err != nil {
		log.Fatal(err)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("app listening on http://%s; toolgate is under http://%s/gateway/ (API key %s)\n",
		ln.Addr(), ln.Addr(), demoKey)
	srv := &http.Server{Handler: app, ReadHeaderTimeout: 5 * time.Second, WriteTimeout: 20 * time.Second}
	log.Fatal(srv.Serve(ln))
}

// newApp is the existing application, with the gateway mounted in it. Its
// memory store is pruned until ctx is done.
func newApp(ctx context.Context, logOut io.Writer) (http.Handler, error) {
	gateway, err := newGateway(ctx)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", home)
	mux.HandleFunc("GET /status", status)
	// StripPrefix hands the gateway the paths it knows (/v1/..., /tools/...,
	// /approvals..., /healthz).
	mux.Handle("/gateway/", http.StripPrefix("/gateway", gateway))

	// The application's own middleware wraps the gateway like any route.
	return logRequests(log.New(logOut, "app: ", 0), servedBy(mux)), nil
}

// newGateway builds the gateway's HTTP handler over the built-in tools: its
// JSON API, its approval pages and its tools' documentation.
func newGateway(ctx context.Context) (http.Handler, error) {
	reg := registry.New()
	if err := tools.RegisterAll(reg); err != nil {
		return nil, err
	}
	gw, err := toolgate.New(memory.New(), &toolgate.Config{
		Registry:  reg,
		Transport: recorded.Transport(), // no network; drop it for live upstreams
	})
	if err != nil {
		return nil, err
	}
	go gw.RunRetention(ctx, time.Minute)

	keys := apikey.NewKeyStore()
	if err := keys.AddKey("demo", demoKey); err != nil {
		return nil, err
	}
	return toolgatehttp.NewHandler(gw, &toolgatehttp.Options{Authenticator: keys}), nil
}

func home(w http.ResponseWriter, _ *http.Request) {
	fmt.Fprintln(w, "Hello from the existing application. The tool gateway is under /gateway/.")
}

func status(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]string{"status": "ok", "gateway": "/gateway/v1/registry/tools"})
}

// servedBy is the application's own middleware: a header on every response.
func servedBy(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Served-By", "mount-example")
		next.ServeHTTP(w, r)
	})
}

// logRequests logs method, path and status; never headers, which carry API keys.
func logRequests(l *log.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		l.Printf("%s %s %d", r.Method, r.URL.Path, rec.status)
	})
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(status int) {
	r.status = status
	r.ResponseWriter.WriteHeader(status)
}
