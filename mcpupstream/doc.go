// Package mcpupstream puts the tools of the MCP servers people already run
// behind a toolgate gateway: it connects to each upstream server as an MCP
// client (go-sdk's), lists its tools, and registers each as a registry tool,
// so that calling it goes through the gateway's one call pipeline: quote,
// policy, approvals by people, input validation, spend controls and rate
// limits, one execution record, and then one tools/call upstream.
//
// A server is a command the gateway starts and speaks to over stdio, a
// streamable HTTP URL, or any go-sdk transport a program supplies (Server).
// Each tool the server serves becomes the tool "{id}.{name}": its name,
// description and schemas are the upstream's (provider-supplied text, never
// instructions), while its pricing, capabilities, provider and trust are the
// operator's, never the upstream's; the upstream's annotations are shown as
// claims and never lower a tool's risk. Everything the upstream says about
// a tool is part of its manifest digest, so a server that changes a tool's
// description makes a new version, and standing approvals of the old one go
// stale. Pins (a file of accepted digests, written by "toolgate mcp pin")
// go further: a tool whose definition is not the one pinned is served but
// blocked.
//
// Start connects servers to a gateway's registry and keeps them connected:
// processes are restarted with a growing wait when they exit, HTTP sessions
// re-initialized when the server forgets them, tools listed again when the
// server says they changed, and everything stopped by Close (SIGTERM, then
// SIGKILL, to each process and whatever it started).
//
// A call's answer becomes the tool's output: its structuredContent, which the
// gateway checks against the output schema, or else {"content": [...]} with
// its content blocks as MCP shapes them (at most 1 MiB each, 4 MiB in all).
// An answer flagged isError, or a JSON-RPC error, fails the call, uncharged.
// A request that may have reached the server with no answer back (the
// connection broke, the deadline passed) is sent again on a fresh connection
// only for a retry-safe tool; for any other the gateway records the call
// ambiguous, since it may have run. Requests of the server back to the
// gateway (sampling, elicitation, roots) are refused.
package mcpupstream
