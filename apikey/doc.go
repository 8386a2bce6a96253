// Package apikey authenticates the keys that callers and approvers send
// as "Authorization: Bearer <key>": the Authenticator and
// ApproverAuthenticator interfaces every toolgate handler takes (the HTTP
// API, the approval pages and the MCP server alike), KeyStore, the
// implementation over SHA-256 digests, and BearerToken, the one reading of
// the header they all share.
//
// Beside keys, the HTTP API and the MCP server can accept OAuth access
// tokens in the same header: TokenVerifier is what they ask of a verifier
// of tokens (package oauth has the one for an identity provider's JWTs),
// BearerCredential reads the longer credential, and Challenge writes the
// WWW-Authenticate of a refusal that sends a client to sign in.
package apikey
