package registry

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/toolgate/toolgate/toolgatetype"
)

// ManifestSchemaVersion names the manifest format hashed into every digest.
const ManifestSchemaVersion = "toolgate.tool-version/v1"

// Manifest is the immutable description of one tool version. Its canonical
// JSON is what a manifest digest, and so a user's approval, binds to.
type Manifest struct {
	SchemaVersion string                              `json:"schemaVersion"`
	Slug          string                              `json:"slug"`
	Name          string                              `json:"name"`
	Description   string                              `json:"description"`
	Category      string                              `json:"category"`
	Tags          []string                            `json:"tags"`
	Provider      ManifestProvider                    `json:"provider"`
	Endpoint      ManifestEndpoint                    `json:"endpoint"`
	InputSchema   json.RawMessage                     `json:"inputSchema"`
	OutputSchema  json.RawMessage                     `json:"outputSchema"`
	Capabilities  toolgatetype.NormalizedCapabilities `json:"capabilities"`
	Pricing       ManifestPricing                     `json:"pricing"`
	// Credential and Output appear only for tools defined by a manifest
	// file (see HTTPTemplate).
	Credential *ManifestCredential `json:"credential,omitempty"`
	Output     *ManifestOutput     `json:"output,omitempty"`
	// Upstream appears only for tools served by an upstream MCP server.
	Upstream *ManifestUpstream `json:"upstream,omitempty"`
}

// ManifestProvider is the provider part of a manifest.
type ManifestProvider struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// ManifestEndpoint is the endpoint part of a manifest. Query, Headers and
// Body appear only for tools defined by a manifest file.
type ManifestEndpoint struct {
	Origin  string            `json:"origin"`
	Method  string            `json:"method"`
	Path    string            `json:"path"`
	Query   map[string]string `json:"query,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    json.RawMessage   `json:"body,omitempty"`
}

// ManifestPricing is the pricing part of a manifest, amounts as 4-decimal text.
type ManifestPricing struct {
	Type     string `json:"type"`
	Amount   string `json:"amount"`
	Currency string `json:"currency"`
}

// ManifestOf builds the manifest of a tool version as it would be served
// from origin.
func ManifestOf(t *Tool, origin string) Manifest {
	tags := t.Tags
	if tags == nil {
		tags = []string{}
	}
	out := t.OutputSchema
	if len(out) == 0 {
		out = json.RawMessage("null")
	}
	m := Manifest{
		SchemaVersion: ManifestSchemaVersion,
		Slug:          t.Slug,
		Name:          t.Name,
		Description:   t.Description,
		Category:      t.Category,
		Tags:          tags,
		Provider:      ManifestProvider{ID: t.Provider.ID, Name: t.Provider.Name},
		Endpoint:      ManifestEndpoint{Origin: origin, Method: t.Endpoint.Method, Path: t.Endpoint.Path},
		InputSchema:   t.InputSchema,
		OutputSchema:  out,
		Capabilities:  NormalizeCapabilities(t.Capabilities, origin),
		Pricing: ManifestPricing{
			Type:     t.Pricing.Type,
			Amount:   t.Pricing.Amount.StringFixed(4),
			Currency: t.Pricing.Currency,
		},
	}
	m.addHTTPTemplate(t.HTTP)
	m.addUpstream(t.Upstream)
	return m
}

// Digest returns "sha256:" and the lowercase hex SHA-256 of the manifest's
// RFC 8785 canonical JSON.
func (m Manifest) Digest() (string, error) {
	raw, err := json.Marshal(m)
	if err != nil {
		return "", fmt.Errorf("registry: encode manifest: %w", err)
	}
	canon, err := Canonicalize(raw)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(canon)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}
