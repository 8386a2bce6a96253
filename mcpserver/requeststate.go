package mcpserver

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/toolgate/toolgate/toolgatetype"
)

// requestState is what a call that needs a person's approval hands its
// client under protocol 2026-07-28 (the input-required result's
// requestState), for the client to send back with the call made again and
// the answer: the call it asked about, so that the answer approves that
// call and no other.
//
// It is sealed with the fleet's keys (Options.Sealing), so a client can neither read nor alter
// it, and it binds the principal, the tool, the input (by hash), the
// manifest digest and quote the question was about, the approval request
// an approver decides (approver mode), and when it stops being good. It
// also carries the call's Idempotency-Key: every answer given with one
// state is the same logical call, so the tool runs once however often the
// state comes back, and a state sent again answers with the first run's
// result.
type requestState struct {
	Mode      toolgatetype.ApprovalMode `json:"m"`
	Principal string                    `json:"p"`
	Tool      string                    `json:"t"`
	InputHash string                    `json:"i"` // hex SHA-256 of the canonical arguments
	Digest    string                    `json:"d"`
	Quote     string                    `json:"q"`
	Request   string                    `json:"r,omitempty"` // the approval request, approver mode
	Key       string                    `json:"k"`
	Expires   int64                     `json:"e"` // Unix seconds
}

// stateUse is the additional data a requestState is sealed with: what the
// fleet's key seals for another use (a cookie, say) never opens as one.
var stateUse = []byte("toolgate mcp requestState v1")

// newState is the state of a question about call c.
func newState(c *toolCall, mode toolgatetype.ApprovalMode, digest, quote, request string, expires time.Time) requestState {
	return requestState{
		Mode: mode, Principal: c.Principal(), Tool: c.Tool().Tool.Slug, InputHash: inputHash(c.Input()),
		Digest: digest, Quote: quote, Request: request, Key: c.key, Expires: expires.Unix(),
	}
}

// inputHash is the hex SHA-256 of canonical arguments.
func inputHash(canonical []byte) string {
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:])
}

// sealState seals st for its client to carry.
func (g *gateway) sealState(st requestState) (string, error) {
	plain, err := json.Marshal(st)
	if err != nil {
		return "", err
	}
	return g.opts.Sealing.SealString(plain, stateUse), nil
}

// openState opens the requestState a call made again carries, and checks
// that it was given for this very call: the same principal, tool and
// arguments, and not past its expiry. Anything else is the protocol's
// invalid params, and nothing runs.
func (g *gateway) openState(c *toolCall, s string) (requestState, error) {
	var st requestState
	raw, err := g.opts.Sealing.OpenString(s, stateUse)
	if err == nil {
		err = json.Unmarshal(raw, &st)
	}
	if err != nil {
		return st, invalidState("it was not issued by this gateway, or it was altered")
	}
	if st.Principal != c.Principal() || st.Tool != c.Tool().Tool.Slug || st.InputHash != inputHash(c.Input()) {
		return st, invalidState(fmt.Sprintf("it was issued for another call, not this caller's call of %s with these arguments", c.Tool().Tool.Slug))
	}
	if !g.gw.Clock().Now().Before(time.Unix(st.Expires, 0)) {
		return st, invalidState(fmt.Sprintf("it expired at %s, with the quote it was issued under", time.Unix(st.Expires, 0).UTC().Format(time.RFC3339)))
	}
	return st, nil
}

// invalidState is the error for a requestState that cannot be used.
func invalidState(why string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "requestState cannot be used: " + why +
		". Nothing was run or charged; make the call again without inputResponses and requestState to be asked anew."}
}
