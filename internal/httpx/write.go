package httpx

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
)

// WriteJSON answers with v as JSON, the bytes json.Marshal gives.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	e := encoders.Get().(*encoder)
	defer e.release()
	e.buf.Reset()
	if err := e.enc.Encode(v); err != nil {
		WriteRaw(w, http.StatusInternalServerError, []byte(`{"error":{"code":"internal_error","message":"the gateway could not encode its answer"}}`))
		return
	}
	// Encode is Marshal with a newline after the value.
	WriteRaw(w, status, bytes.TrimSuffix(e.buf.Bytes(), []byte{'\n'}))
}

// WriteRaw answers with a JSON body as it is. The headers are set in the
// map directly under their canonical names, which Set would look up and
// allocate anew on every answer.
func WriteRaw(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h["Content-Type"] = jsonContentType
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	w.WriteHeader(status)
	w.Write(body)
}

// jsonContentType is every JSON answer's Content-Type. The slice is shared:
// http.Header's own methods replace a value rather than write into it.
var jsonContentType = []string{"application/json"}

// encoder encodes an answer into a buffer kept from one answer to the
// next: Marshal would allocate each answer's bytes once more only to have
// them copied into the connection's buffer and dropped. The response
// writer is done with the bytes once Write returns.
type encoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

var encoders = sync.Pool{New: func() any {
	e := new(encoder)
	e.enc = json.NewEncoder(&e.buf)
	return e
}}

// maxPooledAnswer is the largest buffer kept for the next answer; one grown
// on a long listing goes to the collector.
const maxPooledAnswer = 64 << 10

func (e *encoder) release() {
	if e.buf.Cap() <= maxPooledAnswer {
		encoders.Put(e)
	}
}
