package registry

import (
	"net/url"
	"path/filepath"
)

// manifestAuth is a manifest's "auth": how its provider learns who calls.
type manifestAuth struct {
	TokenExchange *manifestTokenExchange `json:"tokenExchange"`
}

type manifestTokenExchange struct {
	TokenURL     string             `json:"tokenUrl"`
	Audience     string             `json:"audience"`
	Scope        string             `json:"scope"`
	Resource     string             `json:"resource"`
	ClientID     string             `json:"clientId"`
	ClientSecret manifestCredential `json:"clientSecret"`
}

// tokenExchange checks the manifest's token exchange and reads its client
// secret, as the credential's value is read (ManifestCheck.Credential says
// when it cannot be); nil when it has none. Key
// callers are let through when the manifest also has a credential for them.
func (p *manifestParser) tokenExchange() *TokenExchange {
	m := p.m
	if m.Auth == nil || m.Auth.TokenExchange == nil || p.misfit("auth") {
		return nil
	}
	in := m.Auth.TokenExchange
	at := jsonPath("auth").key("tokenExchange")
	if u, err := url.Parse(in.TokenURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || u.Fragment != "" {
		p.fail(p.errorf(at.key("tokenUrl"), "must be an http or https URL with a host, and no credentials or fragment"))
		return nil
	}
	if f := in.ClientSecret.File; f != "" && !filepath.IsAbs(f) {
		p.fail(p.errorf(at.key("clientSecret").key("file"), "must be an absolute path"))
		return nil
	}
	if len(p.errs) > 0 && !p.readAnyway {
		return nil
	}
	secret, err := readCredential(p.file, at.key("clientSecret"), in.ClientSecret, p.opts)
	if err != nil {
		// Like the credential's, about where the manifest is read rather
		// than the manifest: a check goes on, the server refuses it.
		if p.credErr == nil {
			p.credErr = err
		}
		return nil
	}
	return &TokenExchange{
		Upstream:     m.Slug,
		TokenURL:     in.TokenURL,
		Audience:     in.Audience,
		Scope:        in.Scope,
		Resource:     in.Resource,
		ClientID:     in.ClientID,
		ClientSecret: secret.value,
		KeyCallers:   m.Credential != nil,
	}
}
