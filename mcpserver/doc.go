// Package mcpserver serves a toolgate.Gateway over the Model Context
// Protocol, on the official SDK (github.com/modelcontextprotocol/go-sdk), so
// agent runtimes reach the gateway's tools the way they reach any MCP tool.
//
// Every tool of the gateway's registry that a principal can call is an MCP
// tool named by its slug, listed at the time of asking: a tool registered
// later appears, a blocked tool or one the principal's spend controls block
// does not. Its description states the price with the gateway fee, the
// approval it needs, and that its output is untrusted data from its
// provider; its _meta carries the manifest digest, the total and the
// approval requirement.
//
// A tools/call is one question to the gateway, Gateway.CallTool, which
// quotes and calls through the same Gateway.Quote and Gateway.Call as an
// HTTP caller, so every rule holds unchanged: the input schema (checked
// before anything is quoted), the policy and its approval, spend controls
// and rate limits, exactly-once calls, untrusted output, failures never
// charged. The server translates the call into that question, and the
// answer into a result, a question for the client, or a tool error.
// Approval, for a principal in caller mode, is given by the client: the
// manifest digest in _meta["toolgate/approval"] (the agent asked its user
// itself), or a form elicitation the server sends to the person at the
// client ("Approve {name} for ${total}? version {digest}"), whose
// "remember: never_ask" records a standing approval of that exact version.
// A client that can do neither gets a tool error saying how to approve.
//
// A call runs once per _meta["toolgate/idempotencyKey"] or, without one,
// per JSON-RPC request id within the session, so a re-sent request gets the
// first answer back. Both are combined with the tool and its arguments: the
// same key with other arguments is a new call.
//
// Two ways to serve:
//
//	// stdio, or any transport: one principal, the gateway in process.
//	srv, _ := mcpserver.NewServer(gw, "alice", nil)
//	err := srv.Run(ctx, &mcp.StdioTransport{})
//
//	// streamable HTTP: each request's Bearer key names its principal.
//	h, _ := mcpserver.NewHandler(gw, &mcpserver.Options{Authenticator: keys})
//	mux.Handle("/mcp", h)
//	srv.RegisterOnShutdown(h.Close) // lets Shutdown end the clients' event streams
//
// For a principal in approver mode only an approver, a person with a key
// of their own, approves: _meta and forms count for nothing. A call that
// needs approval makes an approval request and sends the client to its
// page (/approvals/{id} of the HTTP API, under Options.PublicURL or the
// address the HTTP request came in at) with the URL-elicitation-required
// error, the request's id as elicitation id; a client that cannot open
// URLs gets a tool error carrying the URL. When the client makes the same
// call again (same principal, tool and arguments), the request is found in
// the store, on any instance: pending, the client is sent to the same
// page; approved, the call runs with the grant, under the quote the
// request was made for; denied, a tool error until the request would have
// expired. A grant serves one call, and an approval that expired unused is
// asked for anew, saying so.
//
// With Options.TracerProvider, each MCP message the server handles is an
// OpenTelemetry span named as the MCP semantic conventions say ("tools/call
// {tool}", "tools/list", "initialize"...), parent of the gateway's quote and
// execute_tool spans for a call, and each request it sends its client (an
// approval form) a span under the call's. A span continues the trace
// context of the message's _meta ("traceparent"), else of the HTTP request
// that carried it; arguments, results and keys are never attributes.
package mcpserver
