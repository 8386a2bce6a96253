// Package toolgatetype is toolgate's shared vocabulary: the types every
// layer speaks, in process, over the HTTP API, over MCP and through the Go
// client. It holds the error type and its stable codes, quotes, call
// requests and results, tool calls as an agent protocol makes them (with
// no quote of the caller's), executions, registry entries, policy and risk,
// approvals and approval requests, spend controls, audit pages and their
// filters, idempotency-key validation, and the JSON bodies of the API.
//
// It depends on nothing else of toolgate's, so a program that only talks
// to a remote gateway (package client) links this package, the standard
// library, uuid and decimal, and none of the engine, the stores or the
// server.
//
// Every rejection anywhere is an *Error with a stable Code: match it with
// errors.As and branch on the code, never on the message.
package toolgatetype
