package httpx

import (
	"net/http"
	"strconv"

	"github.com/toolgate/toolgate/internal/jsonbuf"
)

// WriteJSON answers with v as JSON, the bytes json.Marshal gives. They are
// encoded into a pooled buffer: the response writer is done with them once
// Write returns.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	b := jsonbuf.Get()
	defer b.Release()
	body, err := b.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		body = []byte(`{"error":{"code":"internal_error","message":"the gateway could not encode its answer"}}`)
	}
	WriteRaw(w, status, body)
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
