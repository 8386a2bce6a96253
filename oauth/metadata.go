package oauth

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// MetadataPath is the well-known path of protected resource metadata (RFC
// 9728). A resource with a path has its metadata at this path followed by
// its own ("/.well-known/oauth-protected-resource/mcp" for ".../mcp").
const MetadataPath = "/.well-known/oauth-protected-resource"

// MetadataURL is where the metadata of the protected resource identified
// by resource is published (RFC 9728): MetadataPath inserted between its
// host and its path, less any trailing "/".
func MetadataURL(resource string) string {
	u, err := url.Parse(resource)
	if err != nil {
		return ""
	}
	return u.Scheme + "://" + u.Host + MetadataPath + strings.TrimSuffix(u.EscapedPath(), "/")
}

// ResourceMetadataURL is the URL of the gateway's protected resource
// metadata, derived from the Audience, which every refusal names.
func (v *Verifier) ResourceMetadataURL() string { return v.metadata }

// Scopes returns the call scope and the approve scope.
func (v *Verifier) Scopes() (call, approve string) { return v.cfg.CallScope, v.cfg.ApproveScope }

// Metadata is the gateway's protected resource metadata: the Audience as
// the resource, the Issuer as its one authorization server, the scopes,
// and tokens sent in the Authorization header only.
func (v *Verifier) Metadata() *oauthex.ProtectedResourceMetadata {
	return &oauthex.ProtectedResourceMetadata{
		Resource:               v.cfg.Audience,
		AuthorizationServers:   []string{v.cfg.Issuer},
		ScopesSupported:        []string{v.cfg.CallScope, v.cfg.ApproveScope},
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "toolgate",
	}
}

// MetadataHandler serves Metadata, to anyone and from any origin (it is
// public), at MetadataPath, at MetadataPath followed by the Audience's
// path, and at MetadataPath followed by each of endpoints (the paths the
// gateway serves, "/mcp" say), so that a client finds it whichever URL it
// derives it from. Any other path is 404. Mount it at MetadataPath and
// under MetadataPath + "/".
func (v *Verifier) MetadataHandler(endpoints ...string) http.Handler {
	paths := map[string]bool{MetadataPath: true}
	if u, err := url.Parse(v.cfg.Audience); err == nil {
		paths[MetadataPath+strings.TrimSuffix(u.EscapedPath(), "/")] = true
	}
	for _, e := range endpoints {
		paths[MetadataPath+"/"+strings.Trim(e, "/")] = true
	}
	serve := auth.ProtectedResourceMetadataHandler(v.Metadata())
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !paths[strings.TrimSuffix(r.URL.EscapedPath(), "/")] {
			http.NotFound(w, r)
			return
		}
		serve.ServeHTTP(w, r)
	})
}
