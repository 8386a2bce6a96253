package registry

import (
	"encoding/json"
	"maps"
)

// HTTPTemplate is how a tool defined by a manifest builds its request and
// reads its answer, as the manifest states it. It is part of the manifest
// digest, so an approval binds to it. The credential's value is not in it:
// only whether one is sent, in which header and with which scheme.
type HTTPTemplate struct {
	// Query and Headers are the templates of the query parameters and
	// headers, by name, values with {field} placeholders.
	Query   map[string]string
	Headers map[string]string
	// Body is `"input"`, an object template, or nil for no body.
	Body json.RawMessage
	// CredentialHeader is the header the provider key goes in; empty when
	// the tool sends none. CredentialScheme precedes the key, as in Bearer.
	CredentialHeader string
	CredentialScheme string
	// OutputPointer and ErrorMessagePointer are RFC 6901 pointers into the
	// provider's answer: the output, and the provider's error message.
	OutputPointer       string
	ErrorMessagePointer string
}

// clone copies h deeply enough that the caller's later changes cannot reach
// a registered version.
func (h *HTTPTemplate) clone() *HTTPTemplate {
	if h == nil {
		return nil
	}
	c := *h
	c.Query = maps.Clone(h.Query)
	c.Headers = maps.Clone(h.Headers)
	if h.Body != nil {
		c.Body = append(json.RawMessage(nil), h.Body...)
	}
	return &c
}

// ManifestCredential is the credential part of a manifest: that a key is
// sent, in which header, with which scheme. Never the key.
type ManifestCredential struct {
	Header string `json:"header"`
	Scheme string `json:"scheme,omitempty"`
}

// ManifestOutput is the output part of a manifest: where in the provider's
// answer the output and the error message are.
type ManifestOutput struct {
	Pointer             string `json:"pointer,omitempty"`
	ErrorMessagePointer string `json:"errorMessagePointer,omitempty"`
}

// addHTTPTemplate puts a manifest tool's request and response details into
// its digested manifest. Every field it adds is left out when absent, so
// the manifests (and digests) of tools written in Go stay as they were.
func (m *Manifest) addHTTPTemplate(h *HTTPTemplate) {
	if h == nil {
		return
	}
	m.Endpoint.Query = h.Query
	m.Endpoint.Headers = h.Headers
	m.Endpoint.Body = h.Body
	if h.CredentialHeader != "" {
		m.Credential = &ManifestCredential{Header: h.CredentialHeader, Scheme: h.CredentialScheme}
	}
	if h.OutputPointer != "" || h.ErrorMessagePointer != "" {
		m.Output = &ManifestOutput{Pointer: h.OutputPointer, ErrorMessagePointer: h.ErrorMessagePointer}
	}
}
