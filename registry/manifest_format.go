package registry

import (
	_ "embed"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/xeipuuv/gojsonschema"
)

// ManifestFormat names the tool manifest format, the value of a manifest's
// schemaVersion.
const ManifestFormat = "toolgate.tool/v1"

//go:embed manifest.schema.json
var manifestFormatSchema []byte

// ManifestFormatSchema returns the JSON Schema of the tool manifest format,
// which every manifest is validated against and which editors can use to
// complete and check manifests as they are written.
func ManifestFormatSchema() []byte {
	return append([]byte(nil), manifestFormatSchema...)
}

var compiledFormat = sync.OnceValues(func() (*gojsonschema.Schema, error) {
	return gojsonschema.NewSchema(gojsonschema.NewBytesLoader(manifestFormatSchema))
})

// trustFields are names a manifest might use to vouch for itself. They are
// unknown fields like any other, but the error says why they cannot exist.
var trustFields = map[string]bool{
	"verified": true, "verifiedAt": true, "paymentVerified": true, "endpointVerified": true, "trust": true,
}

// friendlyPattern explains the patterns of the format in words, by path.
var friendlyPattern = map[string]string{
	"slug":              "must be 1 to 64 lowercase letters, digits and dashes, starting and ending with a letter or digit",
	"endpoint.path":     `must start with "/"`,
	"pricing.amount":    `must be a decimal amount in USD with at most 4 decimals, such as "0.0100"`,
	"credential.header": "must be an HTTP header name",
	"credential.scheme": "must be one word, such as Bearer",
}

// checkFormat validates a decoded manifest against the format's schema and
// returns the first failure, by path, as a *ManifestError. doc is data
// decoded, used to tell array indexes from member names in the paths
// gojsonschema reports.
func checkFormat(file string, data []byte, doc any) error {
	if fs := formatFailures(file, data, doc); len(fs) > 0 {
		return fs[0]
	}
	return nil
}

// formatFailures is every failure of a manifest against the format's
// schema, one per JSON path, in the order checkFormat reports them: an
// unknown field first (a misspelt name also leaves a required one missing,
// and the misspelling is what to fix), a missing field last, then by path;
// at one path, the more telling message.
func formatFailures(file string, data []byte, doc any) []*ManifestError {
	schema, err := compiledFormat()
	if err != nil {
		// The schema is embedded and tested; this is a build mistake.
		return []*ManifestError{manifestErrorf(file, "", "the manifest format's schema does not compile: %v", err)}
	}
	res, err := schema.Validate(gojsonschema.NewBytesLoader(data))
	if err != nil {
		return []*ManifestError{manifestErrorf(file, "", "invalid JSON")}
	}
	if res.Valid() {
		return nil
	}
	type failure struct {
		class    int
		path     jsonPath
		reason   string
		priority int
	}
	var fs []failure
	for _, e := range res.Errors() {
		path := contextPath(e.Context(), doc)
		f := failure{class: 1, path: path, priority: 1}
		switch e.Type() {
		case "required":
			prop, _ := e.Details()["property"].(string)
			f.class, f.path, f.reason = 2, path.key(prop), "is required"
		case "additional_property_not_allowed":
			prop, _ := e.Details()["property"].(string)
			f.class, f.path, f.reason = 0, path.key(prop), "is not a field of "+ManifestFormat
			if trustFields[prop] {
				f.reason += `: a manifest cannot vouch for itself; only the operator's "trust" config marks a tool verified`
			}
		case "invalid_type":
			f.reason = "must be " + article(e.Details()["expected"]) + ", not " + article(e.Details()["given"])
		case "const":
			f.reason = "must be " + strings.Trim(detail(e.Details()["allowed"]), " ")
		case "enum":
			f.reason = "must be one of " + detail(e.Details()["allowed"])
		case "number_one_of":
			f.priority = 0
			switch path {
			case "credential":
				f.reason = "must name exactly one of env or file"
			case "endpoint.body":
				f.reason = `must be "input" or an object template`
			default:
				f.reason = "matches none of the allowed forms"
			}
		case "pattern":
			f.reason = friendlyPattern[string(path)]
			if f.reason == "" {
				f.reason = "is not in the expected form"
			}
		default:
			f.reason = lowerFirst(strings.TrimPrefix(e.Description(), e.Field()+" "))
		}
		fs = append(fs, f)
	}
	sort.SliceStable(fs, func(i, j int) bool {
		if fs[i].class != fs[j].class {
			return fs[i].class < fs[j].class
		}
		if fs[i].path != fs[j].path {
			return fs[i].path < fs[j].path
		}
		return fs[i].priority < fs[j].priority
	})
	var out []*ManifestError
	seen := map[jsonPath]bool{}
	for _, f := range fs {
		if !seen[f.path] {
			seen[f.path] = true
			out = append(out, manifestErrorf(file, f.path, "%s", f.reason))
		}
	}
	return out
}

// contextPath turns gojsonschema's context ("(root)", "endpoint", "query")
// into a jsonPath, walking doc to know which elements are array indexes.
func contextPath(ctx *gojsonschema.JsonContext, doc any) jsonPath {
	if ctx == nil {
		return ""
	}
	parts := strings.Split(ctx.String("\x00"), "\x00")
	var path jsonPath
	cur := doc
	for _, part := range parts[1:] { // parts[0] is "(root)"
		switch v := cur.(type) {
		case []any:
			if i, err := strconv.Atoi(part); err == nil && i >= 0 && i < len(v) {
				path, cur = path.index(i), v[i]
				continue
			}
		case map[string]any:
			path, cur = path.key(part), v[part]
			continue
		}
		path, cur = path.key(part), nil
	}
	return path
}

// lowerFirst lowercases the first letter of gojsonschema's sentences, to
// read as the rest of a "path: reason" line.
func lowerFirst(s string) string {
	if s == "" || s[0] < 'A' || s[0] > 'Z' {
		return s
	}
	return string(s[0]+'a'-'A') + s[1:]
}

func article(v any) string {
	s := detail(v)
	switch s {
	case "integer", "object", "array":
		return "an " + s
	case "null":
		return "null"
	case "":
		return "another type"
	}
	return "a " + s
}

func detail(v any) string {
	s, _ := v.(string)
	return s
}
