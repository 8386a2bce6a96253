package httpx

import (
	"context"
	"net/http"

	"github.com/toolgate/toolgate/toolgatetype"
)

// RefusalLog is what a server's request log line says of a request the
// API refused: who asked (the principal or approver it authenticated
// as), the error code and, for a budget's refusal, the budget and its
// window. Never a key or a token: only what the gateway itself names.
type RefusalLog struct {
	Principal string
	Code      toolgatetype.Code
	Budget    string
	Window    string
}

type refusalLogKey struct{}

// WithRefusalLog returns r carrying an empty RefusalLog, which the API's
// handlers fill in as they authenticate and refuse; the request logger
// reads it once the response is written.
func WithRefusalLog(r *http.Request) (*http.Request, *RefusalLog) {
	l := &RefusalLog{}
	return r.WithContext(context.WithValue(r.Context(), refusalLogKey{}, l)), l
}

// NoteWho records who a request authenticated as, for its log line; a
// request that carries no RefusalLog records nothing.
func NoteWho(r *http.Request, who string) {
	if l, ok := r.Context().Value(refusalLogKey{}).(*RefusalLog); ok && who != "" {
		l.Principal = who
	}
}

// noteRefusal records why a request was refused.
func noteRefusal(r *http.Request, te *toolgatetype.Error) {
	l, ok := r.Context().Value(refusalLogKey{}).(*RefusalLog)
	if !ok {
		return
	}
	l.Code = te.Code
	if te.Budget != nil {
		l.Budget, l.Window = te.Budget.ID, string(te.Budget.Window)
	}
}
