package mcpserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// metaRequestKey is the _meta entry through which the transport tells a
// tools/call handler which session and JSON-RPC request it came in: the SDK
// hands handlers neither the request id nor, over stdio, a session id. It
// is always the transport's: whatever a client sends under this name is
// overwritten before the request is read.
const metaRequestKey = "toolgate/requestKey"

// withRequestKeys wraps a transport so that every tools/call read from it
// carries its request key, and a stream's batches are held to
// maxBatchMessages (batchCapped).
func withRequestKeys(t mcp.Transport) mcp.Transport {
	return &keyedTransport{Transport: batchCapped(t)}
}

type keyedTransport struct{ mcp.Transport }

func (t *keyedTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	session := conn.SessionID()
	if session == "" {
		// stdio and in-memory connections have no id; each connection is
		// a session of its own, told apart by a random one.
		session = rand.Text()
	}
	return &keyedConn{Connection: conn, session: session}, nil
}

// SupportsProtocolVersion passes the wrapped transport's answer on, so the
// versions the server offers are the transport's.
func (t *keyedTransport) SupportsProtocolVersion(version string) bool {
	if p, ok := t.Transport.(mcp.ProtocolVersionSupporter); ok {
		return p.SupportsProtocolVersion(version)
	}
	return true
}

type keyedConn struct {
	mcp.Connection
	session string
}

func (c *keyedConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if req, ok := msg.(*jsonrpc.Request); ok && req.Method == "tools/call" {
		var id []byte
		if req.ID.IsValid() {
			id, _ = json.Marshal(req.ID.Raw())
		}
		req.Params = withRequestKey(req.Params, c.session, id)
	}
	return msg, err
}

// maxBatchMessages is the most messages a JSON-RPC batch may hold. Only
// sessions of protocol revision 2025-03-26 take batches (the SDK refuses
// them in later revisions), and there the SDK runs every message of one:
// a 1 MB body of 20,000 requests made 168 MB of answers. No client needs
// more than a handful in one body.
const maxBatchMessages = 100

// errBatchTooLarge is keyHTTPRequest's refusal of a batch of more than
// maxBatchMessages.
var errBatchTooLarge = errors.New("a JSON-RPC batch may hold at most " + strconv.Itoa(maxBatchMessages) + " messages")

// errNotOneValue is keyHTTPRequest's refusal of a body that is not one
// JSON value. The SDK reads a body with a decoder that stops after its
// first value, so "[...101 calls...] x" would be a batch to it that no
// count here saw, and a call in it would keep a request key of its
// client's choosing.
var errNotOneValue = errors.New("the request body must be one JSON value")

// keyHTTPBody is keyHTTPRequest for a body known to be within bounds: a
// batch too large is returned as it is.
func keyHTTPBody(body []byte, session string) []byte {
	out, _ := keyHTTPRequest(body, session)
	return out
}

// keyHTTPRequest sets the request key of every tools/call in an HTTP
// request body (one JSON-RPC message, or a batch), session being the
// request's Mcp-Session-Id. A batch of more than maxBatchMessages is
// refused (errBatchTooLarge), counted in the one decoding that splits it
// into messages, before any of them is looked at. A body that is not
// JSON-RPC is returned as it is, for the SDK to refuse; one that is not a
// single JSON value is refused (errNotOneValue).
func keyHTTPRequest(body []byte, session string) ([]byte, error) {
	if !json.Valid(body) {
		return body, errNotOneValue
	}
	if session == "" {
		session = rand.Text() // no session yet: no retry can match
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		var batch []json.RawMessage
		if json.Unmarshal(trimmed, &batch) != nil {
			return body, nil
		}
		if len(batch) > maxBatchMessages {
			return body, errBatchTooLarge
		}
		for i, m := range batch {
			batch[i] = keyHTTPMessage(m, session)
		}
		out, err := json.Marshal(batch)
		if err != nil {
			return body, nil
		}
		return out, nil
	}
	return keyHTTPMessage(body, session), nil
}

// keyHTTPMessage sets the request key of one message, if it is a tools/call.
// The method is decoded, not searched for, so no escaping hides a call.
func keyHTTPMessage(msg []byte, session string) []byte {
	// Members by their exact names, as the SDK reads them: a struct
	// would match "Method" or "ID" too, whatever their case.
	var fields map[string]json.RawMessage
	if json.Unmarshal(msg, &fields) != nil {
		return msg
	}
	var method string
	if json.Unmarshal(fields["method"], &method) != nil || method != "tools/call" {
		return msg
	}
	var id []byte
	if raw := fields["id"]; len(raw) > 0 && !bytes.Equal(raw, []byte("null")) {
		id = raw
	}
	params := withRequestKey(fields["params"], session, id)
	if bytes.Equal(params, fields["params"]) {
		return msg
	}
	fields["params"] = params
	out, err := json.Marshal(fields)
	if err != nil {
		return msg
	}
	return out
}

// withRequestKey returns tools/call params whose _meta holds the request key
// of (session, id), id being the request id as JSON (nil for none, which
// leaves no key). Params that are not an object with an object _meta are
// returned as they are: the SDK refuses them.
func withRequestKey(params json.RawMessage, session string, id []byte) json.RawMessage {
	fields := map[string]json.RawMessage{}
	if len(bytes.TrimSpace(params)) > 0 && (json.Unmarshal(params, &fields) != nil || fields == nil) {
		return params // not an object; null among them, which leaves fields nil
	}
	meta := map[string]json.RawMessage{}
	if raw, ok := fields["_meta"]; ok && !bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		if json.Unmarshal(raw, &meta) != nil {
			return params
		}
	}
	delete(meta, metaRequestKey)
	if id != nil {
		// The id's JSON keeps 1 and "1" apart, as JSON-RPC does.
		key, _ := json.Marshal(session + " " + string(id))
		meta[metaRequestKey] = key
	}
	rawMeta, err := json.Marshal(meta)
	if err != nil {
		return params
	}
	fields["_meta"] = rawMeta
	out, err := json.Marshal(fields)
	if err != nil {
		return params
	}
	return out
}
