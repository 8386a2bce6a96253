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
// Every registered tool is added to the SDK's server with its input
// schema, and added again or removed as the registry changes, so the SDK
// routes each tools/call and tells sessions when the tools change
// (notifications/tools/list_changed). A tools/call is one question to the
// gateway: the call prepared once (Gateway.Prepare: the tool, the
// arguments in canonical form, checked against its input schema before
// anything is quoted) and made (Gateway.CallPreparedTool), which quotes and
// calls as for an HTTP caller, so every rule holds unchanged: the policy
// and its approval, spend controls and rate limits, exactly-once calls,
// untrusted output, failures never charged. The server translates the call
// into that question, and the answer into a result, a question for the
// client, or a tool error.
// Approval, for a principal in caller mode, is given by the client: the
// manifest digest in _meta["toolgate/approval"] (the agent asked its user
// itself), or a form elicitation the server sends to the person at the
// client ("Approve {name} for ${total}? version {digest}"), whose
// "remember: never_ask" records a standing approval of that exact version.
// A client that can do neither gets a tool error saying how to approve.
//
// Under protocol 2026-07-28 a question is not a request of the server's but
// an input-required result (multi round-trip requests): the client asks
// its user and makes the call again with the answer and the result's
// requestState. The state is sealed (Options.Sealing) and binds the
// principal, the tool, the arguments, the digest and quote asked about,
// the approval request (approver mode) and an expiry; one that does not
// open or names another call is the protocol's invalid params, and nothing
// runs. It carries the call's idempotency key, so the tool runs once
// however often a state comes back, and the same state and answer sent
// again get the first run's result. Any instance sharing the store and the
// sealing keys takes up an answer. Before 2026-07-28 the server asks
// within the call, as a request of its own.
//
// A completed call's result is its output as structuredContent (an array
// output as {"items": [...]}) and the same JSON as text, with the execution
// id, cost and receipt in _meta. A refusal of the gateway's (spend limits
// and budgets, rate limits, a blocked tool, a wrong approval digest, a bad
// idempotency key...) is a tool error (isError) whose one text is the HTTP
// API's error body as JSON, {"error": {"code", "message", ...}} with the
// details the HTTP API gives (violations, budget, retryAfterSeconds), and
// the same body in _meta["toolgate/error"], so a program reads the code
// and details where a model reads the words. A refusal never has
// structuredContent, on any tool: a client checks structuredContent
// against the tool's outputSchema, on errors too (the TypeScript SDK's 1.x
// client does), and would answer a refusal there with a protocol error.
// On a tool without an outputSchema it would do no harm, but one shape on
// every tool is one a client can rely on. Tool errors the server words
// itself (arguments that fail the input schema, an approval asked for or
// declined, a failed or ambiguous call) are text beginning with their code.
//
// A call runs once per _meta["toolgate/idempotencyKey"] or, without one,
// per JSON-RPC request id within the session, so a re-sent request gets the
// first answer back. Both are combined with the tool and its arguments: the
// same key with other arguments is a new call. Protocol 2026-07-28 has no
// sessions: there, only the client's key recognises a re-sent request.
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
// The Handler serves protocol 2026-07-28 statelessly (server/discover; any
// instance of a fleet answers any request) beside the revisions before it,
// in sessions, choosing by what each request says it speaks. It refuses
// (403), before reading the key or the body, a request whose Host or
// Origin names no name of the server's: loopback's for a request that
// reached a loopback address, Options.PublicURL's host, and
// Options.AllowedHosts. Lists carry the cache hint Options.ListTTL.
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
// asked for anew, saying so. Under protocol 2026-07-28 the page is sent as
// a URL-mode question in an input-required result instead of the error;
// before it, the session is told when the request is decided or expires
// (notifications/elicitation/complete), whichever instance decided it.
//
// With Options.TracerProvider, each MCP message the server handles is an
// OpenTelemetry span named as the MCP semantic conventions say ("tools/call
// {tool}", "tools/list", "initialize"...), parent of the gateway's quote and
// execute_tool spans for a call, and each request it sends its client (an
// approval form) a span under the call's. A span continues the trace
// context of the message's _meta ("traceparent"), else of the HTTP request
// that carried it; arguments, results and keys are never attributes.
package mcpserver
