// Package tokenexchange gives a tool's provider the caller's identity: the
// access token a caller authenticated with at a door is exchanged (RFC
// 8693, on behalf of the caller) for a token whose audience is the
// provider, which the provider is sent as its bearer token.
//
// The caller's token travels from the door to the gateway, and the
// exchanged token from the gateway to the runner, only as context values
// of this package: neither is a field of any request, execution, record or
// log line. Both are secrets, and nothing here prints them.
package tokenexchange
