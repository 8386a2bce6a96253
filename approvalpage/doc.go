// Package approvalpage serves the approval pages: where a person signs in
// with an approver key, or through the identity provider, and approves or
// denies what agents ask for.
//
//	GET  /approvals          the signed-in approver's pending requests
//	POST /approvals          sign in or out
//	GET  /approvals/{id}     one request, with Approve and Deny
//	POST /approvals/{id}     sign in or out, or decide
//	GET  /approvals/sign-in  sign in through the identity provider
//	GET  <redirect path>     the identity provider's answer
//
// With Options.Provider, people may also sign in through the
// organization's OpenID provider (authorization code flow with PKCE): the
// claims of their verified ID token name the approver they are
// (ProviderSignIn.Approver), and they get the session an approver key
// would give. The sign-in under way (state, nonce, PKCE verifier, the page
// to come back to) is in a cookie sealed with the fleet's key, scoped to
// the redirect's path, for 10 minutes, and spent at its first use in the
// SessionStore, so that a redirect sent again signs no one in on any
// instance. The provider's answer is a page that goes on to the page the
// person opened by itself (a refresh, and a link), not a redirect: the
// session cookie is SameSite=Strict, which a browser does not send on a
// redirect that continues another site's navigation.
//
// Until someone signs in, a page shows only that something is waiting and
// the sign-in form. It needs no JavaScript. Every form is a POST (a key never
// travels in a URL) and resists cross-site forgery three ways: the session
// cookie is SameSite=Strict, every POST must come from this origin (Origin,
// or Referer when a browser sends no Origin), and every form of a session
// carries that session's token. Every string a caller or provider supplied
// is shown through html/template, escaped, with every invisible character
// (a right-to-left override, a zero-width space: pagestyle.Invisible) as
// its escape, \u202E, and each value isolated, so that what a person reads
// is what runs; the Content-Security-Policy allows no script at all.
//
// The origin a POST must come from is the one the request reached: its
// Host, and https on TLS or when a reverse proxy says so in
// X-Forwarded-Proto. A proxy that terminates TLS must say so, or every
// form posted through it is refused as coming from elsewhere.
//
// Sign-in sessions are kept in a SessionStore: by default this process's
// memory (MemorySessionStore); the store several instances share
// (toolgatehttp.StoreSessions) lets a person sign in on one and decide on
// another, and signing out on one ends the session on all at once.
//
// Guessing approver keys is slow: a client address whose sign-ins failed
// too often in a window is refused every key, the right one too, until the
// window ends; a key prefix that failed too often, from any addresses,
// refuses wrong keys with it, but never keeps its approver out from an
// address that has not failed (package authlimit). The refusal says which
// of the two limits it was. A caller's API key is refused with words that
// say it is one and which key to use, and is no failed guess: the API
// would tell as much of it. Any other key is refused the same way,
// whatever it is.
//
// The pages link to each other relative to where the handler is mounted,
// and the HTTP API's approveUrl links to them: mount them beside the API,
// under the same prefix, as package toolgatehttp does.
package approvalpage
