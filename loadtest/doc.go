// Package loadtest holds the load and fault tests of the toolgate server
// binary. It has no API: everything is in its tests.
//
// Each test builds cmd/toolgate, starts it on 127.0.0.1 with a config of its
// own, and points the tools at local upstreams (httptest servers on
// 127.0.0.1) that fail a share of requests: about 10% answer 503, 5% hang
// past the gateway's upstream deadline and 5% answer 200 with garbage. The
// decision is a pure function of TOOLGATE_LOAD_SEED and the request (its
// method, URL and body, and how many times that same request was seen), so a
// run is reproducible up to the order in which concurrent requests arrive.
// No traffic leaves the loopback interface: the tests refuse a PostgreSQL
// URL whose host is not local.
//
// N callers (TOOLGATE_LOAD_CALLERS) spread over several principals run
// quote-and-call pairs for a duration (TOOLGATE_LOAD_DURATION) over the
// free tools and the paid goal-data, made payment-verified by the config.
// Most principals have generous limits; two have tight daily limits, so
// spend_limit_exceeded happens too. One caller in eight gives up on a
// request after a few seconds, as an impatient client does. A caller retries
// a call with the same Idempotency-Key and body after a transport error or
// 409 idempotency_key_in_use. Every loop is bounded by a count and a time.
//
// TestLoadMemory and TestLoadPostgres then assert that:
//
//   - the gateway never answered 5xx, to anyone;
//   - each Idempotency-Key maps to at most one execution id, replays return
//     it with identical bytes, and no two keys share an execution;
//   - every execution a 200 named can be fetched with GET
//     /v1/executions/{id}, byte-identical to the call's answer;
//   - the spend a final quote reports per principal (controls.global
//     dailyUsedUsd) equals the sum of the completed executions' totalUsd,
//     and no tight principal went over its limit (on PostgreSQL the charged
//     rows of the ledger are summed too);
//   - the server's memory stays flat after warm-up (see below).
//
// TestLoadShutdownPostgres sends SIGTERM halfway through a run: the server
// must drain and exit 0 leaving no unfinished idempotency record, running
// execution or reserved spend in the database; restarted on the same
// database, every key sent before the signal must, retried with the same
// body, replay its stored answer (the same execution as any earlier 200) or
// run fresh, and never answer 409 for good.
//
// # Memory rule
//
// The server's resident set (VmRSS in /proc/PID/status) is read every
// second while the load runs. The window is cut in thirds: the first is
// warm-up; the largest sample of the last third must not exceed the largest
// of the middle third by more than 25% plus 10 MiB, plus, with the memory
// store, twice what that store had to keep during the last third (it holds
// every execution for a day by design: each response and about 2 KiB of
// records per call; twice, for the garbage collector's headroom). The rule is
// enforced only when the window is at least 15 s and the binary is built
// without the race detector; otherwise the samples are only logged, since a
// few samples, or the race detector's shadow memory, make it noise.
//
// # Short and full forms
//
// By default the tests run a short form (40 callers for 3 s) that fits in
// the normal go test -race ./... run. The full form:
//
//	TOOLGATE_LOAD_DURATION=30s TOOLGATE_LOAD_CALLERS=200 go test -run Load -timeout 10m -v ./loadtest/
//
// The server binary is built with -race exactly when the tests are: under
// go test -race the race-instrumented packages are already in the build
// cache, so the build is cheap and the server is race-checked under load;
// the full form, run without -race, measures a normal binary's latency and
// memory. Upstream hangs still pending when the load window closes are
// answered 503 at once, so a run ends with its window rather than 10 s
// later; in the full form the hangs of the first 20 s still reach the
// gateway's deadline, and TestLoadShutdownPostgres always drains hangs in
// flight at the signal through it.
//
// The PostgreSQL tests need TOOLGATE_TEST_POSTGRES_URL (they skip without
// it, and fail when CI=true). Each makes a database of its own and drops it
// after, or, when it may not create one, uses the given database with
// principals of its own. The whole package is skipped under -short.
package loadtest
