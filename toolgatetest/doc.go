// Package toolgatetest helps test code that uses a toolgate.Gateway, in the
// manner of net/http/httptest: a ready gateway in a few lines, over an
// in-memory store, a registry of its own, a FakeClock and a fake Upstream
// that answers like the real providers, counts what reaches it and never
// touches the network.
//
//	gw := toolgatetest.New(t, nil)
//	res, err := gw.CallApproved(t, "alice", "earthquake-search", `{"starttime":"2024-09-25"}`)
//	toolgatetest.RequireCompleted(t, res, err, "0.0000")
//	gw.Upstream.RequireCalls(t, 1)
//
// EchoTool is a small tool of one's own whose trust facts and price a test
// sets to reach any policy; Upstream answers it too. Agent code under test
// takes gw.Gateway, the *toolgate.Gateway itself.
//
// BenchQuoteCall measures quote+call pairs through a gateway over any
// storage.Store; each store's package benchmarks itself with it. It lives
// here, beside the gateway it drives, so that storagetest, the stores'
// conformance suite, depends on the storage contract alone.
package toolgatetest
