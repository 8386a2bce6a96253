package tools_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/tools"
	"github.com/toolgate/toolgate/tools/recorded"
)

// FuzzNormalize feeds every built-in tool's normalizer arbitrary provider
// answers. Whatever arrives, a normalizer must not panic, and what it
// accepts must encode as JSON. (Fit to the output schema is the gateway's
// check, made on every execution.)
func FuzzNormalize(f *testing.F) {
	for _, name := range recorded.Names() {
		rec := recorded.Response(name)
		f.Add(rec.StatusCode, rec.Body)
	}
	f.Add(200, []byte(`{"type":"FeatureCollection","features":[{"properties":{"mag":1e400}}]}`))
	f.Add(200, []byte(`[{"date":"x","approved":true}]`))
	f.Add(204, []byte(nil))
	f.Add(500, []byte("\xff\xfe"))

	all := tools.All()
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		resp := registry.UpstreamResponse{StatusCode: status, Header: http.Header{"Content-Type": {"application/json"}}, Body: body}
		for _, tool := range all {
			out, err := tool.Normalize(resp)
			if err != nil {
				continue
			}
			if _, err := json.Marshal(out); err != nil {
				t.Fatalf("%s: normalized output does not encode: %v", tool.Slug, err)
			}
		}
	})
}
