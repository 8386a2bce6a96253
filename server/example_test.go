package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/toolgate/toolgate/server"
)

// The whole server in process, from a config: its handler quotes a paid
// call of goal-data, whose demo provider Offline answers and trusts.
func Example() {
	cfg, err := server.ParseConfig([]byte(`{
		"principals": [{"id": "alice", "apiKeys": ["tg_example_alice"]}]
	}`))
	if err != nil {
		log.Fatal(err)
	}
	srv, err := server.New(context.Background(), cfg, &server.Options{Offline: true})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	api := httptest.NewServer(srv.Handler()) // or srv.Serve(ctx, listener), or srv.ListenAndServe(ctx)
	defer api.Close()

	req, _ := http.NewRequest(http.MethodPost, api.URL+"/v1/tools/goal-data/quote", nil)
	req.Header.Set("Authorization", "Bearer tg_example_alice")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	var quote struct {
		Quote struct {
			TotalUSD string `json:"totalUsd"`
		} `json:"quote"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&quote); err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.Status, quote.Quote.TotalUSD)
	// Output: 201 Created 0.1100
}

// A mistake in the config names its field, and the field meant.
func ExampleParseConfig() {
	_, err := server.ParseConfig([]byte(`{"principals": [{"id": "alice", "apiKey": ["tg_example_alice"]}]}`))
	fmt.Println(err)
	// Output: config: principals[0]: unknown field "apiKey": did you mean "apiKeys"?
}
