// Package authlimit makes guessing keys slow. Every handler that checks an
// API key, an approver key or a token (the HTTP API, MCP, the approval
// pages' sign-in) tells a Limiter how each check went, and answers 429
// with Retry-After when it says so.
//
// Failed checks are counted per client address and per key prefix, in a
// window that begins with the first failure (a minute by default). Once a
// window holds the limit's failures (10 by default), every check that
// would count in it is refused until the window ends: a wrong key, and
// the right key too, so that a guesser cannot tell a hit from a miss.
// Counting by key prefix slows a guesser who spreads one key's guesses
// over many addresses; it also lets anyone who knows a key's first
// characters hold that key back for a window at a time, so the prefix is
// kept short of the key's secret part only as far as the operator sets.
//
// Counts live in a storage.WindowCounter: the store's, when the instances
// of a fleet share it, so that failures on one count on all; this
// process's memory otherwise. A prefix is counted by its SHA-256, never in
// clear, and a key no longer than the prefix by address only, so that no
// key, whole or in part, is ever kept.
//
// The client address is the connection's peer, or, when that peer is a
// trusted proxy, the nearest address X-Forwarded-For names that is not
// one. IPv6 addresses count by their /64, which one host commonly holds.
package authlimit
