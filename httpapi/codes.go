package httpapi

import (
	"net/http"

	"github.com/toolgate/toolgate"
)

// Error codes only the HTTP layer meets: the gateway never sees a request
// with the wrong method, an oversized body or a body that is not JSON.
const (
	codeMethodNotAllowed     toolgate.Code = "method_not_allowed"
	codePayloadTooLarge      toolgate.Code = "payload_too_large"
	codeUnsupportedMediaType toolgate.Code = "unsupported_media_type"
)

// statusOf is the HTTP status an error code is answered with.
func statusOf(code toolgate.Code) int {
	switch code {
	case codeMethodNotAllowed:
		return http.StatusMethodNotAllowed
	case codePayloadTooLarge:
		return http.StatusRequestEntityTooLarge
	case codeUnsupportedMediaType:
		return http.StatusUnsupportedMediaType
	}
	return code.HTTPStatus()
}
