package registry

import "encoding/json"

// Transports of an upstream MCP server, as its tools' manifests name them.
const (
	MCPTransportStdio = "stdio" // a process the gateway starts, spoken to over stdin and stdout
	MCPTransportHTTP  = "http"  // streamable HTTP at a URL
)

// MCPUpstream is where a tool served by an upstream MCP server comes from.
// Everything the upstream says about the tool is in Definition, so any
// change to it is a new manifest digest: a new version, whose approvals
// start over.
type MCPUpstream struct {
	// Server is the id the operator gave the server.
	Server string
	// Transport is MCPTransportStdio, MCPTransportHTTP, or what a program
	// connecting its own transport calls it.
	Transport string
	// Address is the command line or URL the server is reached at.
	Address string
	// Definition is the tool as the upstream served it, as JSON: its name,
	// title, description, inputSchema, outputSchema and annotations. It is
	// provider-supplied text, never instructions.
	Definition json.RawMessage

	// PinRequired says the operator pins this server's tools: a version
	// whose digest is not PinnedDigest is served but blocked. Neither is
	// part of the manifest.
	PinRequired bool
	// PinnedDigest is the digest the operator pinned for this tool; "" when
	// none is.
	PinnedDigest string
}

// ManifestUpstream is the upstream part of the manifest of a tool served by
// an upstream MCP server.
type ManifestUpstream struct {
	Server    string          `json:"server"`
	Transport string          `json:"transport"`
	Address   string          `json:"address"`
	Tool      json.RawMessage `json:"tool"`
}

// clone copies u deeply enough that the caller's later changes cannot reach
// a registered version.
func (u *MCPUpstream) clone() *MCPUpstream {
	if u == nil {
		return nil
	}
	c := *u
	c.Definition = append(json.RawMessage(nil), u.Definition...)
	return &c
}

// addUpstream puts an upstream MCP tool's origin and definition into its
// digested manifest; absent for every other tool, whose digest stays as it
// was.
func (m *Manifest) addUpstream(u *MCPUpstream) {
	if u == nil {
		return
	}
	def := u.Definition
	if len(def) == 0 {
		def = json.RawMessage("null")
	}
	m.Upstream = &ManifestUpstream{Server: u.Server, Transport: u.Transport, Address: u.Address, Tool: def}
}
