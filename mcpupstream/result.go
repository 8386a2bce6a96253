package mcpupstream

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/redact"
	"github.com/toolgate/toolgate/registry"
)

// Caps on what a call's answer may bring back.
const (
	// MaxBlockBytes caps one content block of an answer, as JSON.
	MaxBlockBytes = 1 << 20
	// MaxResultBytes caps a whole answer's output, as JSON.
	MaxResultBytes = 4 << 20
)

// outputOf turns an upstream's answer into the tool's output: its
// structuredContent when it has one, which the gateway then checks against
// the output schema; otherwise {"content": [...]} with its content blocks as
// MCP shapes them. An answer flagged isError, one asking the gateway for
// input (sampling, elicitation, roots), and one over the size caps are
// failures. provider names the server in messages; secrets are taken out of
// whatever the upstream's text brings back.
func outputOf(res *mcp.CallToolResult, provider string, secrets *redact.Secrets) (json.RawMessage, error) {
	if res.NeedsInput() {
		return nil, registry.Upstreamf(registry.CodeUpstreamError,
			"%s asked the gateway for input (sampling, elicitation or roots) to finish the call; the gateway gives none", provider)
	}
	if res.IsError {
		msg := provider + " reported that the call failed"
		if reason := excerpt(secrets, textOf(res.Content)); reason != "" {
			msg += "; provider message: " + reason
		}
		return nil, &registry.UpstreamError{Code: registry.CodeUpstreamError, Message: msg}
	}
	var out []byte
	if res.StructuredContent != nil {
		raw, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return nil, registry.Upstreamf(registry.CodeUpstreamInvalidResponse, "%s answered structured content that is not JSON", provider)
		}
		if len(raw) > MaxResultBytes {
			return nil, tooLarge(provider)
		}
		out = raw
	} else {
		blocks := make([]json.RawMessage, 0, len(res.Content))
		total := 0
		for i, c := range res.Content {
			raw, err := json.Marshal(c)
			if err != nil {
				return nil, registry.Upstreamf(registry.CodeUpstreamInvalidResponse, "%s answered a content block that cannot be read (block %d)", provider, i)
			}
			if len(raw) > MaxBlockBytes {
				return nil, registry.Upstreamf(registry.CodeUpstreamTooLarge, "%s answered a content block of more than 1 MiB (block %d)", provider, i)
			}
			if total += len(raw); total > MaxResultBytes {
				return nil, tooLarge(provider)
			}
			blocks = append(blocks, raw)
		}
		raw, err := json.Marshal(struct {
			Content []json.RawMessage `json:"content"`
		}{blocks})
		if err != nil {
			return nil, registry.Upstreamf(registry.CodeUpstreamInvalidResponse, "%s answered content that cannot be read", provider)
		}
		out = raw
	}
	return secrets.JSON(out), nil
}

func tooLarge(provider string) error {
	return registry.Upstreamf(registry.CodeUpstreamTooLarge, "%s answered more than 4 MiB", provider)
}

// textOf is the text of an answer's text blocks, joined.
func textOf(content []mcp.Content) string {
	var parts []string
	for _, c := range content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, " ")
}

// providerName is how messages name a server's provider.
func providerName(s *Server) string {
	if s.Provider.Name != "" {
		return fmt.Sprintf("the MCP server %s (%s)", s.ID, s.Provider.Name)
	}
	return "the MCP server " + s.ID
}
