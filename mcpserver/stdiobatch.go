package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// batchCapped returns t with the batches it reads held to maxBatchMessages,
// as the HTTP handler holds them, for the transports that read a stream
// of JSON values (stdio, and any io.Reader): the SDK splits a batch into
// its messages inside its connection, out of the request keying's sight,
// and runs every one. A batch of more is answered with a JSON-RPC Invalid
// Request error (no id) and none of its messages is read; the session
// goes on. Any other transport is returned as it is.
func batchCapped(t mcp.Transport) mcp.Transport {
	var in io.ReadCloser
	var out io.WriteCloser
	limit := 0
	switch t := t.(type) {
	case *mcp.IOTransport:
		in, out, limit = t.Reader, t.Writer, t.MaxLineLength
	case *mcp.StdioTransport:
		in, out, limit = os.Stdin, nopWriteCloser{os.Stdout}, t.MaxLineLength
	default:
		return t
	}
	if limit == 0 {
		limit = mcp.DefaultMaxLineLength
	}
	w := &lockedWriter{w: out}
	pr, pw := io.Pipe()
	go capBatches(in, pw, w, limit)
	// The values are bounded here already.
	return &mcp.IOTransport{Reader: &pipeReader{PipeReader: pr, src: in}, Writer: w, MaxLineLength: -1}
}

// capBatches copies the JSON values of in to pw, one a line, as the SDK
// reads them (each at most limit bytes, followed by nothing but a line
// break), but for a batch of more than maxBatchMessages, which it answers
// on w itself. Whatever ends the copy ends pw with it.
func capBatches(in io.Reader, pw *io.PipeWriter, w io.Writer, limit int) {
	lr := &frameLimit{r: in, limit: limit}
	dec := json.NewDecoder(lr)
	refusal, _ := jsonrpc.EncodeMessage(&jsonrpc.Response{Error: &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: errBatchTooLarge.Error()}})
	refusal = append(refusal, '\n')
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			pw.CloseWithError(err)
			return
		}
		var tr [1]byte
		if n, _ := dec.Buffered().Read(tr[:]); n > 0 && tr[0] != '\n' && tr[0] != '\r' {
			pw.CloseWithError(errors.New("invalid trailing data at the end of stream"))
			return
		}
		lr.n = 0
		if t := bytes.TrimSpace(raw); len(t) > 0 && t[0] == '[' {
			var batch []json.RawMessage
			if json.Unmarshal(t, &batch) == nil && len(batch) > maxBatchMessages {
				if _, err := w.Write(refusal); err != nil {
					pw.CloseWithError(err)
					return
				}
				continue
			}
		}
		if _, err := pw.Write(append(raw, '\n')); err != nil {
			return // the connection closed its end
		}
	}
}

// frameLimit refuses a value longer than limit bytes, as the SDK does.
type frameLimit struct {
	r        io.Reader
	limit, n int
}

var errFrameLimit = errors.New("inbound JSON-RPC frame exceeded the configured maximum line length")

func (f *frameLimit) Read(p []byte) (int, error) {
	if f.limit < 0 {
		return f.r.Read(p)
	}
	if f.n >= f.limit {
		return 0, errFrameLimit
	}
	if len(p) > f.limit-f.n {
		p = p[:f.limit-f.n]
	}
	n, err := f.r.Read(p)
	f.n += n
	return n, err
}

// pipeReader closes the source the pipe is fed from with itself.
type pipeReader struct {
	*io.PipeReader
	src io.Closer
}

func (r *pipeReader) Close() error {
	_ = r.PipeReader.Close()
	return r.src.Close()
}

// lockedWriter writes one message at a time: the SDK's, and the refusals
// capBatches writes itself.
type lockedWriter struct {
	mu sync.Mutex
	w  io.WriteCloser
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) Close() error { return l.w.Close() }

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
