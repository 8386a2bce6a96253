package toolgate

import (
	"encoding/json"

	"github.com/toolgate/toolgate/internal/ruling"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/rules"
	"github.com/toolgate/toolgate/toolgatetype"
)

// PreparedCall is a call of a tool resolved once, for CallPreparedTool:
// the caller, the tool's current version and the input in canonical form,
// checked against its schema. It is read-only and safe to share.
type PreparedCall struct {
	principal string
	tool      *registry.Version
	input     []byte // canonical (RFC 8785)
	// failures is what validating input against the tool's input schema
	// found, once validated; validated is false until then, for a call
	// that reports them only after the checks made before (see Call).
	failures  []toolgatetype.FieldError
	validated bool
	// ruled is what the organization's rules decided of the call, once
	// ruledDone; hideMatches are the audit hide rules that matched its
	// tool's lookup. Both are set on a call's own copy, never on a
	// PreparedCall shared.
	ruled       *ruling.Decided
	ruledDone   bool
	hideMatches []rules.Match
}

// Prepare resolves a call of tool (by slug or id) with input for
// principal: it looks the tool up, puts the input in canonical form and
// validates it against the tool's input schema, refusing as Call and
// CallTool do (unauthorized, tool_not_found, invalid_request,
// input_invalid).
func (g *Gateway) Prepare(principal, tool string, input json.RawMessage) (*PreparedCall, error) {
	if err := validPrincipal(principal); err != nil {
		return nil, err
	}
	v, err := g.lookup(tool)
	if err != nil {
		return nil, err
	}
	canonical, err := canonicalInput(input)
	if err != nil {
		return nil, err
	}
	p := &PreparedCall{principal: principal, tool: v, input: canonical}
	if err := p.inputError(); err != nil {
		return nil, err
	}
	return p, nil
}

// Principal is who makes the call.
func (p *PreparedCall) Principal() string { return p.principal }

// Tool is the tool's version the call was prepared for.
func (p *PreparedCall) Tool() *registry.Version { return p.tool }

// Input is the call's input in canonical form (RFC 8785).
func (p *PreparedCall) Input() json.RawMessage { return p.input }

// inputError validates the input against the tool's input schema, the
// first time it is asked, and returns the input_invalid refusal when it
// does not match.
func (p *PreparedCall) inputError() error {
	if !p.validated {
		p.failures, p.validated = p.tool.Input.Validate(p.input, "input"), true
	}
	if p.failures != nil {
		return &toolgatetype.Error{Code: toolgatetype.CodeInputInvalid, Message: "the input does not match the tool's input schema", Details: p.failures}
	}
	return nil
}
