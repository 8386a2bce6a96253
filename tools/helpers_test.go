package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/registry"
)

// buildRequest runs a tool's BuildRequest against origin.
func buildRequest(t *testing.T, tool *registry.Tool, origin, input string) *http.Request {
	t.Helper()
	req, err := tool.BuildRequest(context.Background(), origin, json.RawMessage(input))
	require.NoError(t, err)
	return req
}

// requestBody reads a built request's body, leaving GetBody to replay it.
func requestBody(t *testing.T, req *http.Request) string {
	t.Helper()
	if req.Body == nil || req.Body == http.NoBody {
		return ""
	}
	b, err := io.ReadAll(req.Body)
	require.NoError(t, err)
	return string(b)
}

// body is a synthetic upstream answer, for shapes no recording covers.
func body(status int, text string) registry.UpstreamResponse {
	return registry.UpstreamResponse{StatusCode: status, Header: http.Header{}, Body: []byte(text)}
}

// upstreamErr asserts err is a *registry.UpstreamError and returns it.
func upstreamErr(t *testing.T, err error) *registry.UpstreamError {
	t.Helper()
	var ue *registry.UpstreamError
	require.True(t, errors.As(err, &ue), "want *registry.UpstreamError, got %T: %v", err, err)
	return ue
}

// schemaOf compiles a schema the way the registry does.
func schemaOf(t *testing.T, raw json.RawMessage) *registry.Schema {
	t.Helper()
	s, err := registry.CompileSchema(raw)
	require.NoError(t, err)
	return s
}

// requireMatchesOutputSchema marshals a normalized output and validates it
// against the tool's own output schema, as the gateway does after Normalize.
func requireMatchesOutputSchema(t *testing.T, tool *registry.Tool, out any) {
	t.Helper()
	doc, err := json.Marshal(out)
	require.NoError(t, err)
	require.Empty(t, schemaOf(t, tool.OutputSchema).Validate(doc, "output"), "output: %s", doc)
}

// inputCase is one input checked against a tool's input schema.
type inputCase struct {
	name  string
	input string
	valid bool
}

func checkInputs(t *testing.T, tool *registry.Tool, cases []inputCase) {
	t.Helper()
	schema := schemaOf(t, tool.InputSchema)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			errs := schema.Validate([]byte(tc.input), "input")
			if tc.valid {
				require.Empty(t, errs)
			} else {
				require.NotEmpty(t, errs, "schema accepted %s", tc.input)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
