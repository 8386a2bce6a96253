// Package authlimit makes guessing keys slow, and never locks the owner of
// a right key out. Every handler that checks an API key, an approver key
// or a token (the HTTP API, MCP, the approval pages' sign-in) tells a
// Limiter how each check went, and answers 429 with Retry-After, naming
// the limit, when it says so.
//
// Failed checks are counted per client address and per key prefix, in a
// window that begins with the first failure (a minute by default). The two
// limits refuse differently:
//
//   - An address that holds the limit's failures (10 by default) in its
//     window is refused every check until the window ends: a wrong key,
//     and the right key too, so that a guesser cannot tell a hit from a
//     miss. Only that address's own failures count there.
//   - A key prefix that holds the limit's failures, from any addresses,
//     refuses every wrong key with that prefix, and the right key only
//     from an address that has itself failed in its own window. The right
//     key from an address that has not failed goes on: anyone can make a
//     prefix's failures, so a prefix's count alone must never keep the
//     key's owner out.
//
// What a guesser learns: each check's key is verified first and the
// Limiter told the outcome, so the work done is the same whatever it
// decides. From an address that has failed, a held prefix answers 429
// alike for a hit and a miss, as before. From an address that has not, a
// hit goes on and a miss is refused, and is counted: the address has then
// failed, and gets no further answer at that prefix until its window
// ends. So a guesser spreading over addresses gets one answered guess at
// a held prefix per fresh address per window, where without the prefix
// limit each address would get the full limit's worth; no guess is
// answered that the address limit alone would not answer. The owner who
// mistypes their own key while its prefix is held waits out their own
// address's window (a minute at most), which no one else can lengthen.
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
