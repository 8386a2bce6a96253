package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// newGetRequest builds a GET to origin+path with query q. Query values go
// through url.Values and path segments through url.PathEscape at the call
// sites, so no input can add parameters or change the route.
func newGetRequest(ctx context.Context, origin, path string, q url.Values) (*http.Request, error) {
	target := strings.TrimSuffix(origin, "/") + path
	if len(q) > 0 {
		target += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, fmt.Errorf("tools: build upstream request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	return req, nil
}

// newJSONRequest builds a POST of body, encoded as JSON, to origin+path.
// The body is a byte reader so the request can be replayed (GetBody) by a
// transport that retries.
func newJSONRequest(ctx context.Context, origin, path string, body any) (*http.Request, error) {
	raw, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("tools: encode upstream request: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(origin, "/")+path, bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("tools: build upstream request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Content-Type", "application/json")
	return req, nil
}
