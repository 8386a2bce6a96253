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
// A running server takes a changed config's rules, approvers and budgets without
// a restart (reload.go): Server.Reload reads its file again (command
// toolgate's SIGHUP), a server started from a file watches it
// (Options.ConfigPollInterval), and Server.ReloadConfig applies a Config
// made in Go. The other fields take effect at the next start.
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
// The file is decoded by encoding/json into structs (configJSON and the
// section types beside each section's checks), through internal/strictjson,
// which adds what the decoder alone cannot:
//
//   - where an unknown field is, and which was meant: strictjson.Check
//     refuses a member its struct does not know (in any case: encoding/json
//     would take "apikeys" for "apiKeys") with the object's path and the
//     struct's names to suggest from;
//   - a field given twice, which the decoder would take the last of;
//   - where a bad value is: encoding/json's *UnmarshalTypeError names struct
//     fields only ("principals.tools.allowed"), and a value that decodes
//     itself stops the decoder with no place at all; strictjson.Locate
//     finds the first value that does not decode, with its array indexes
//     and map keys ("principals[0].spendControls.tools.goal-data.allowed").
//
// The small value types (durations, amounts, counts, ids) decode themselves,
// so that a mistake is said in the field's own words ("must be a duration
// such as \"5m\", not a number") and a number is read by its text, not
// through a float: an amount is exactly what was written, and a
// million-digit one costs nothing to refuse. A member given as null is
// absent. The checks of each section, and those across fields (a lease
// longer than the upstream timeout, a budget's members among the
// principals), run on the decoded structs, and name the field too.
package server
