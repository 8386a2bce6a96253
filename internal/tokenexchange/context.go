package tokenexchange

import "context"

// callerTokenKey carries the raw access token a caller authenticated with.
type callerTokenKey struct{}

// upstreamTokenKey carries the token exchanged for the provider of the call
// under way.
type upstreamTokenKey struct{}

// WithCallerToken returns ctx carrying the access token its caller
// authenticated with, for the gateway to exchange should a tool ask for the
// caller's identity. The doors set it once the token is verified; a caller
// with an API key has none.
func WithCallerToken(ctx context.Context, token string) context.Context {
	if token == "" {
		return ctx
	}
	return context.WithValue(ctx, callerTokenKey{}, secret(token))
}

// CallerToken is the token WithCallerToken put in ctx.
func CallerToken(ctx context.Context) (string, bool) {
	t, ok := ctx.Value(callerTokenKey{}).(secret)
	return string(t), ok
}

// WithUpstreamToken returns ctx carrying the token the provider of the call
// under way is to be sent as its bearer token.
func WithUpstreamToken(ctx context.Context, token string) context.Context {
	if token == "" {
		return ctx
	}
	return context.WithValue(ctx, upstreamTokenKey{}, secret(token))
}

// UpstreamToken is the token WithUpstreamToken put in ctx.
func UpstreamToken(ctx context.Context) (string, bool) {
	t, ok := ctx.Value(upstreamTokenKey{}).(secret)
	return string(t), ok
}

// secret is a token as a context value: a context printed (%v of a
// context lists its values) shows a mark, not the token.
type secret string

func (secret) String() string   { return "[token]" }
func (secret) GoString() string { return "[token]" }
