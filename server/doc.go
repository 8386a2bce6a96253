// Package server is the whole toolgate server as a library: the config
// file's shape and its parsing (Config, LoadConfig, ParseConfig), and the
// assembly of everything the file describes into one Server (New): the
// gateway over the configured store (memory, SQLite or PostgreSQL), its
// HTTP API, MCP at /mcp and the approval pages on one handler, the tools
// of manifests and of the MCP servers it gates, API keys and an identity
// provider's tokens, approvers, budgets, webhooks, signed receipts, the
// state a fleet of instances shares, Prometheus metrics and OpenTelemetry
// traces. Command toolgate is this package behind flags; an embedder
// starts the same server in its own process:
//
//	cfg, err := server.LoadConfig("toolgate.json")
//	if err != nil { ... } // one line naming the field: config: budgets[0].parent: ...
//	srv, err := server.New(ctx, cfg, &server.Options{Logger: log})
//	if err != nil { ... }
//	defer srv.Close()
//	err = srv.ListenAndServe(ctx) // until ctx is done, then the calls in flight finish
//
// or mounts Server.Handler on a server of its own, or speaks MCP over
// stdio to one principal with Server.ServeMCP.
//
// # The config file
//
// The README's "The server" section describes its fields. A mistake is a
// *ConfigError whose message names the field by its path
// ("principals[0].spendControls.dailyLimitUsd"), with the field meant when
// an unknown one is a slip of a key or two; a bad tool manifest is a
// *registry.ManifestError naming its file. No error quotes an API key, a
// secret or a database URL, since they end up in logs.
//
// The file is read by a small walker over encoding/json's raw values
// (configjson.go) rather than decoded by encoding/json into structs,
// because the decoder cannot say what an operator needs to know, or
// refuse what it should:
//
//   - where a bad value is: its *UnmarshalTypeError names struct fields
//     only ("principals.tools.allowed"), neither the array index nor the
//     map key ("principals[0].spendControls.tools.goal-data.allowed");
//   - where an unknown field is, and which was meant: DisallowUnknownFields
//     says `json: unknown field "apiKey"`, not in which object, and has no
//     names to suggest from;
//   - a field given twice: the decoder keeps the last, silently;
//   - each field's own words for a value of the wrong kind ("must be a
//     duration such as \"5m\", not a number"), and a number read by its
//     text, not through a float, so an amount is exactly what was written
//     and a million-digit one costs nothing to refuse.
//
// encoding/json still does the reading (the syntax, each string and
// boolean): the walker keeps each value's path beside it. Checks across fields (a lease longer than the upstream
// timeout, a budget's members among the principals) run once the whole
// file is read, and name the field too.
package server
