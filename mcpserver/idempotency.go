package mcpserver

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolgate/toolgate/toolgatetype"
)

// metaIdempotencyKey is the _meta entry where a client names its logical
// call, as an HTTP caller does with the Idempotency-Key header.
const metaIdempotencyKey = "toolgate/idempotencyKey"

// idempotencyKey is the gateway Idempotency-Key of a tools/call: the
// client's own key when it gives one, else the session and JSON-RPC request
// id the transport put in _meta, else (a session connected without this
// package's transport, which tells no request apart) a key of its own,
// which runs the call once but cannot recognise a re-sent request.
//
// The key is a digest of that name together with the tool and its canonical
// arguments. So a re-sent request finds its first run, while the same name
// given to another call, which an HTTP caller would be refused for, is a new
// call here: an MCP client has no quote of its own to tell its requests
// apart by, and a stale answer to other arguments would be worse than a
// second call. It returns an invalid_request *toolgatetype.Error for a client
// key that is not 1 to 255 printable ASCII characters.
func idempotencyKey(meta mcp.Meta, toolID string, canonicalArgs []byte) (string, error) {
	var name string
	switch raw, given := meta[metaIdempotencyKey]; {
	case given:
		key, _ := raw.(string)
		if err := toolgatetype.ValidateIdempotencyKey(key); err != nil {
			return "", &toolgatetype.Error{Code: toolgatetype.CodeIdempotencyKeyInvalid,
				Message: `_meta["` + metaIdempotencyKey + `"] must be a string of 1 to 255 printable ASCII characters`}
		}
		name = "client " + key
	default:
		if key, ok := meta[metaRequestKey].(string); ok && key != "" {
			name = "request " + key
		} else {
			name = "once " + rand.Text()
		}
	}
	doc, err := json.Marshal([]any{name, toolID, json.RawMessage(canonicalArgs)})
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(doc)
	return "mcp-" + hex.EncodeToString(sum[:]), nil
}
