package server

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/toolgate/toolgate/internal/httpx"
	"github.com/toolgate/toolgate/rules"
)

// logRequests logs one line per request: method, path, status, size and
// duration. It deliberately logs nothing else from the request: headers
// carry API keys, and query strings are the caller's business.
func logRequests(log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		r, refusal := httpx.WithRefusalLog(r)
		ctx, trail := rules.WithTrail(r.Context())
		r = r.WithContext(ctx)
		next.ServeHTTP(rec, r)
		level := slog.LevelInfo
		if rec.status >= 500 {
			level = slog.LevelError
		}
		attrs := []slog.Attr{
			slog.String("method", r.Method),
			slog.String("path", r.URL.Path),
			slog.Int("status", rec.status),
			slog.Int64("bytes", rec.bytes),
			slog.Float64("durationMs", float64(time.Since(start).Microseconds())/1000),
		}
		// A refusal says who was refused and why, as the gateway named
		// them: an operator asked why a call failed finds it by principal
		// and budget without reading any key.
		if rec.status >= 400 && rec.status < 500 && refusal.Code != "" {
			if refusal.Principal != "" {
				attrs = append(attrs, slog.String("principal", refusal.Principal))
			}
			attrs = append(attrs, slog.String("code", string(refusal.Code)))
			if refusal.Budget != "" {
				attrs = append(attrs, slog.String("budget", refusal.Budget), slog.String("window", refusal.Window))
			}
		}
		// The organization's rules that decided what the request asked,
		// audit ones included: a refusal's only audit record.
		if uses := trail.Uses(); uses != nil {
			attrs = append(attrs, slog.Any("rules", uses))
		}
		log.LogAttrs(r.Context(), level, "request", attrs...)
	})
}

// statusRecorder remembers the status and size of a response.
type statusRecorder struct {
	http.ResponseWriter
	status      int
	bytes       int64
	wroteHeader bool
}

func (r *statusRecorder) WriteHeader(status int) {
	if !r.wroteHeader && status >= 200 { // 1xx are interim: the final status follows
		r.status, r.wroteHeader = status, true
	}
	r.ResponseWriter.WriteHeader(status)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	r.wroteHeader = true
	n, err := r.ResponseWriter.Write(b)
	r.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
