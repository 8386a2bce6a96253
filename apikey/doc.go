// Package apikey authenticates the keys that callers and approvers send
// as "Authorization: Bearer <key>": the Authenticator and
// ApproverAuthenticator interfaces every toolgate handler takes (the HTTP
// API, the approval pages and the MCP server alike), KeyStore, the
// implementation over SHA-256 digests, and BearerToken, the one reading of
// the header they all share.
package apikey
