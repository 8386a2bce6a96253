package mcpserver_test

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/apikey"
	"github.com/toolgate/toolgate/httpapi"
	"github.com/toolgate/toolgate/internal/testidp"
	"github.com/toolgate/toolgate/internal/testproc"
	"github.com/toolgate/toolgate/mcpserver"
	"github.com/toolgate/toolgate/oauth"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/storage/memory"
	"github.com/toolgate/toolgate/tools"
	"github.com/toolgate/toolgate/tools/recorded"
)

// BenchmarkTokenAgainstKey puts calls made with an access token next to
// the same calls made with an API key, in one run, on one server that
// accepts both: a quote and a call through the HTTP API, and a tools/call
// over MCP, as BenchmarkCallOverHTTP makes them. The token is an RS256 JWT
// a real OpenID provider in the process issued; the provider's keys are
// fetched before timing starts, as a server does at start. Each caller
// sends one token for its life, as clients do, so what a token adds is the
// lookup of its verification by digest; BenchmarkVerifyToken in package
// oauth has the cost of a first verification. cpu-ns/op is the process's
// CPU per call, client and server both; the client's work is the same for
// either credential. BENCHMARKS.md has the figures.
func BenchmarkTokenAgainstKey(b *testing.B) {
	env := newTokenBenchServer(b)
	b.Run("httpapi/key", func(b *testing.B) { env.run(b, false, env.apiCaller) })
	b.Run("httpapi/token", func(b *testing.B) {
		env.run(b, false, func(b *testing.B) caller { return env.apiCallerWith(b, env.token(b)) })
	})
	b.Run("mcp/key", func(b *testing.B) { env.run(b, false, env.mcpCaller) })
	b.Run("mcp/token", func(b *testing.B) {
		env.run(b, false, func(b *testing.B) caller { return env.mcpCallerWith(b, env.token(b)) })
	})
}

// tokenBenchServer is a benchServer whose principals may also sign in
// with tokens.
type tokenBenchServer struct {
	*benchServer
	idp *testidp.Provider
}

func newTokenBenchServer(b *testing.B) *tokenBenchServer {
	b.Helper()
	reg := registry.New()
	if err := reg.Register(tools.EarthquakeSearch()); err != nil {
		b.Fatal(err)
	}
	gw, err := toolgate.New(memory.New(), &toolgate.Config{
		Registry:      reg,
		Transport:     testproc.BodyTransport{Body: recorded.Body(recorded.USGSTenFeatures)},
		SpendControls: testproc.RaisedLimits{},
	})
	if err != nil {
		b.Fatal(err)
	}
	v, err := reg.Lookup(benchTool)
	if err != nil {
		b.Fatal(err)
	}
	const audience = "https://toolgate.example/mcp"
	idp := testidp.Start(b, audience)
	verifier, err := oauth.New(&oauth.Config{Issuer: idp.Issuer, Audience: audience})
	if err != nil {
		b.Fatal(err)
	}
	if err := verifier.FetchKeys(b.Context()); err != nil {
		b.Fatal(err)
	}
	env := &tokenBenchServer{benchServer: &benchServer{digest: v.Digest, keys: apikey.NewKeyStore()}, idp: idp}
	agents, err := mcpserver.NewHandler(gw, &mcpserver.Options{Authenticator: env.keys, Tokens: verifier})
	if err != nil {
		b.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", agents)
	mux.Handle("/", httpapi.NewHandler(gw, &httpapi.Options{Authenticator: env.keys, Tokens: verifier}))
	srv := httptest.NewServer(mux)
	b.Cleanup(func() {
		agents.Close()
		srv.Close()
	})
	env.url = srv.URL
	return env
}

// token is a token of a new subject, issued by the provider over HTTP.
func (e *tokenBenchServer) token(b *testing.B) string {
	id := "bench-token-" + strconv.FormatInt(e.next.Add(1), 10)
	e.idp.AddClient(testidp.Client{ID: id, Secret: "s", Scopes: []string{oauth.DefaultCallScope}})
	return e.idp.Token(b, id)
}
