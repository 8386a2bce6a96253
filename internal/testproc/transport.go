package testproc

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
)

// BodyTransport is a gateway's upstream transport that answers every
// request at once with 200 and Body as JSON, so a benchmark measures the
// gateway, not a network.
type BodyTransport struct {
	Body []byte
}

// RoundTrip answers req with Body.
func (t BodyTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		req.Body.Close()
	}
	h := make(http.Header, 2)
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(t.Body)))
	return &http.Response{
		StatusCode: http.StatusOK, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Body: io.NopCloser(bytes.NewReader(t.Body)), ContentLength: int64(len(t.Body)), Request: req,
	}, nil
}
