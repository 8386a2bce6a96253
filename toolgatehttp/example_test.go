package toolgatehttp_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/apikey"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/storage/memory"
	"github.com/toolgate/toolgate/toolgatehttp"
	"github.com/toolgate/toolgate/tools"
)

// Mount the gateway under /gateway/ of an existing server: the JSON API,
// the approval pages and each tool's documentation, on one handler.
func ExampleNewHandler() {
	reg := registry.New()
	if err := tools.RegisterAll(reg); err != nil {
		panic(err)
	}
	gw, err := toolgate.New(memory.New(), &toolgate.Config{Registry: reg})
	if err != nil {
		panic(err)
	}
	keys := apikey.NewKeyStore()
	if err := keys.AddKey("alice", "tg_example_alice"); err != nil {
		panic(err)
	}

	mux := http.NewServeMux()
	mux.Handle("/gateway/", http.StripPrefix("/gateway", toolgatehttp.NewHandler(gw, &toolgatehttp.Options{Authenticator: keys})))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	for _, path := range []string{
		"/gateway/v1/registry/tools/exchange-rates",          // the JSON API
		"/gateway/v1/registry/tools/exchange-rates/llms.txt", // the documentation
		"/gateway/tools/exchange-rates",                      // its page for people
		"/gateway/approvals",                                 // the approval pages
	} {
		resp, err := srv.Client().Get(srv.URL + path)
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
		fmt.Println(resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	// Output:
	// 200 application/json
	// 200 text/plain; charset=utf-8
	// 200 text/html; charset=utf-8
	// 200 text/html; charset=utf-8
}
