// Package oauth makes the gateway an OAuth 2.1 resource server: clients
// sign in with the organization's identity provider and send the JWT
// access token it issued them as "Authorization: Bearer <token>", beside
// or instead of API keys, as the MCP authorization specification asks of
// an MCP server.
//
// A Verifier checks each token against the provider's published keys
// (found through OpenID discovery unless a JWKS URL is given, kept in
// memory, fetched again when a token names a key not yet seen or when an
// hour old, never more than once a minute), its issuer, its audience (the
// gateway's resource identifier, RFC 8707), exp and nbf with 60 s of
// leeway, and RS256, ES256 or EdDSA as its algorithm, nothing else. Its
// scopes and claims then say who it calls as and whom it approves as. The
// signature checks are go-jose's, through go-oidc; this package only
// chooses which keys and algorithms they may use.
//
// A Verifier is an apikey.TokenVerifier: give it to the HTTP API
// (httpapi.Options.Tokens, toolgatehttp.Options.Tokens) and the MCP server
// (mcpserver.Options.Tokens). Their refusals then carry the challenge a
// standard client follows to sign in,
//
//	WWW-Authenticate: Bearer resource_metadata="https://toolgate.example/.well-known/oauth-protected-resource/mcp"
//
// and MetadataHandler serves that document (RFC 9728), naming the issuer
// and the scopes:
//
//	v, err := oauth.New(&oauth.Config{Issuer: "https://idp.example", Audience: "https://toolgate.example/mcp"})
//	mux.Handle(oauth.MetadataPath, v.MetadataHandler("/mcp"))
//	mux.Handle(oauth.MetadataPath+"/", v.MetadataHandler("/mcp"))
//
// Tokens are never logged or stored: verified tokens are remembered, until
// they expire, by their SHA-256 digest only, so that a client's later
// requests with the same token skip the signature check.
package oauth
