package apikey

import "context"

// Authenticator maps an API key to the principal it belongs to.
type Authenticator interface {
	// Authenticate returns the principal of key, or ok false for any key it
	// does not accept. It must not say why: an unknown key and a revoked
	// one look the same to the caller.
	Authenticate(ctx context.Context, key string) (principal string, ok bool)
}

// ApproverAuthenticator maps an approver key to the approver (a person) it
// belongs to. Approver keys decide approval requests; they are never
// caller keys.
type ApproverAuthenticator interface {
	// AuthenticateApprover returns the approver of key, or ok false for any
	// key it does not accept as an approver key, without saying why.
	AuthenticateApprover(ctx context.Context, key string) (approver string, ok bool)
}

// ApproversOf is who decides approval requests when no
// ApproverAuthenticator is given: auth itself when it is one too, as a
// KeyStore is, and otherwise no one (every approver key is refused).
func ApproversOf(auth Authenticator) ApproverAuthenticator {
	if approvers, ok := auth.(ApproverAuthenticator); ok {
		return approvers
	}
	return NewKeyStore()
}
