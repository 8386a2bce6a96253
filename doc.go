// Package toolgate is an embeddable tool gateway for agents: it quotes what
// a registered tool will cost and whether it may be called, then calls it
// safely, exactly once, and returns one normalized result whose output is
// treated as untrusted data.
//
// The flow is two steps. Quote prices a call and returns the policy for the
// caller (is the tool callable, what approval it needs, bound to the exact
// manifest digest of the tool's immutable version) and the spend-control
// decision. Call then runs it under that quote with the input, the approval
// and an Idempotency-Key:
//
//	gw, _ := toolgate.New(memory.New(), nil)
//	q, _ := gw.Quote(ctx, "alice", "earthquake-search")
//	if !q.Policy.Callable || !q.Controls.Approved { ... }
//	res, _ := gw.Call(ctx, "alice", toolgatetype.CallRequest{
//		Tool: "earthquake-search", QuoteID: q.Quote.ID,
//		Input:          json.RawMessage(`{"starttime":"2024-09-25"}`),
//		ApprovalDigest: *q.Quote.ManifestDigest, // once the user approved it
//		IdempotencyKey: "call-1",
//	})
//
// A layer whose callers name a tool and its input but hold no quote, such
// as an MCP server, asks CallTool instead: one question that quotes, finds
// or asks for the approval, and calls, as the gateway's own pipeline.
//
// Every rejection is a *[toolgatetype.Error] with a stable Code and leaves
// nothing in the store, so a corrected request can reuse its key. A retry
// with the same key and request gets the stored result back byte for byte,
// without reaching the provider again; a key reused for another request is
// refused.
//
// The gateway keeps its state in a storage.Store (storage/memory in
// process, storage/postgres for several instances) and takes its clock, its
// upstream transport and its registry from Config, so tests can run it with
// fakes and no network. The built-in tools register themselves when
// github.com/toolgate/toolgate/tools is imported.
//
// The types the Gateway's methods take and return, and the interfaces
// Config takes, are in package toolgatetype.
package toolgate
