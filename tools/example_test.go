package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/tools"
	"github.com/toolgate/toolgate/tools/recorded"
)

// Filling a registry of one's own and running a tool offline, the way the
// gateway does: build the upstream request, send it, normalize the answer.
func Example() {
	r := registry.New()
	if err := tools.RegisterAll(r); err != nil {
		panic(err)
	}
	v, err := r.Lookup("exchange-rates")
	if err != nil {
		panic(err)
	}
	req, err := v.Tool.BuildRequest(context.Background(), v.Origin, json.RawMessage(`{"base":"USD","quotes":"EUR,GBP"}`))
	if err != nil {
		panic(err)
	}
	client := &http.Client{Transport: recorded.Transport()}
	resp, err := client.Do(req)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		panic(err)
	}
	out, err := v.Tool.Normalize(registry.UpstreamResponse{StatusCode: resp.StatusCode, Header: resp.Header, Body: body})
	if err != nil {
		panic(err)
	}
	for _, rate := range out.([]tools.ExchangeRate) {
		fmt.Printf("%s 1 %s = %v %s\n", rate.Date, rate.Base, rate.Rate, rate.Quote)
	}
	// Output:
	// 2026-03-25 1 USD = 0.9251 EUR
	// 2026-03-25 1 USD = 0.7734 GBP
}

// Self-hosting the demo goal provider and pointing goal-data at it.
func ExampleNewGoalProvider() {
	srv := httptest.NewServer(tools.NewGoalProvider())
	defer srv.Close()

	r := registry.New()
	if err := tools.RegisterAll(r); err != nil {
		panic(err)
	}
	if err := r.SetOrigin("goal-data", srv.URL); err != nil {
		panic(err)
	}
	v, err := r.Lookup("goal-data")
	if err != nil {
		panic(err)
	}
	for step := 2; step <= 3; step++ {
		input := fmt.Sprintf(`{"goal":"map the coastline","step":%d}`, step)
		req, err := v.Tool.BuildRequest(context.Background(), v.Origin, json.RawMessage(input))
		if err != nil {
			panic(err)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			panic(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			panic(err)
		}
		out, err := v.Tool.Normalize(registry.UpstreamResponse{StatusCode: resp.StatusCode, Header: resp.Header, Body: body})
		if err != nil {
			panic(err)
		}
		obs := out.(tools.GoalObservation)
		fmt.Println(obs.Step, obs.Datum, obs.GoalAchieved)
	}
	// Output:
	// 2 verified-demo-datum-2 false
	// 3 verified-demo-datum-3 true
}
