package registry_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/registry"
)

// FuzzParseManifest checks, for any file, that parsing never panics; that
// a refusal is one *ManifestError line naming the file and never holding
// the credential; and that an accepted manifest registers, gets a digest
// without the credential in its manifest, builds a request to its origin
// for its example input, and reads any answer without panicking.
func FuzzParseManifest(f *testing.F) {
	f.Add([]byte(baseManifest))
	for _, change := range []func(d map[string]any){
		func(d map[string]any) {
			setPath(d, "endpoint.method", "POST")
			setPath(d, "endpoint.body", map[string]any{"q": "{stationId}", "n": "{limit}", "s": "a {units} b"})
		},
		func(d map[string]any) { setPath(d, "endpoint.path", "/a/{stationId}{units}/b") },
		func(d map[string]any) { setPath(d, "credential.scheme", "Bearer") },
		func(d map[string]any) { setPath(d, "endpoint.verified", true) },
		func(d map[string]any) { d["pricing"] = map[string]any{"type": "per_call", "amount": "1.00001"} },
		func(d map[string]any) { setPath(d, "output.pointer", "/a~1b/0") },
	} {
		doc := manifestDoc(f)
		change(doc)
		f.Add(encode(f, doc))
	}
	for _, seed := range []string{``, `{}`, `[]`, `null`, `{"slug":1}`, `{"a":1,"a":2}`, "\xff", `{"endpoint":{"path":"/{"}}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tool, err := registry.ParseManifest("fuzz.json", data, parseOpts(nil))
		if err != nil {
			var me *registry.ManifestError
			if !errors.As(err, &me) || me.File != "fuzz.json" {
				t.Fatalf("not a ManifestError for the file: %T %v", err, err)
			}
			if strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), testSecret) {
				t.Fatalf("error is not one clean line: %q", err)
			}
			return
		}
		if err := registry.New().Register(tool); err != nil {
			t.Fatalf("an accepted manifest does not register: %v", err)
		}
		raw, err := json.Marshal(registry.ManifestOf(tool, tool.Endpoint.Origin))
		if err != nil || strings.Contains(string(raw), testSecret) {
			t.Fatalf("manifest: %v, or it holds the credential", err)
		}
		if len(tool.ExampleInput) > 0 {
			req, err := tool.BuildRequest(t.Context(), tool.Endpoint.Origin, tool.ExampleInput)
			if err == nil && req.URL.Scheme+"://"+req.URL.Host != tool.Endpoint.Origin {
				t.Fatalf("request to %s, not the origin %s", req.URL, tool.Endpoint.Origin)
			}
		}
		for _, status := range []int{200, 404} {
			_, _ = tool.Normalize(registry.UpstreamResponse{StatusCode: status, Header: http.Header{}, Body: data})
		}
	})
}
