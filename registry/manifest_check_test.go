package registry_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/registry"
)

// firstProblem is what ParseManifest would report of c: its first
// mistake, or else why its credential could not be read.
func firstProblem(c registry.ManifestCheck) *registry.ManifestError {
	if len(c.Errors) > 0 {
		return c.Errors[0]
	}
	return c.Credential
}

// reasons are the "path: reason" of each error, in order.
func reasons(errs []*registry.ManifestError) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Path+": "+e.Reason)
	}
	return out
}

// noEnv is an environment with nothing set.
func noEnv(string) (string, bool) { return "", false }

// A manifest with three mistakes gets three errors, in the order
// ParseManifest meets them; ParseManifest reports the first.
func TestCheckManifestListsEveryMistake(t *testing.T) {
	t.Parallel()
	doc := manifestDoc(t)
	setPath(doc, "endpoint.origin", "http://api.acme.test")
	setPath(doc, "endpoint.query.units", "{unit}")
	setPath(doc, "pricing", map[string]any{"type": "per_call", "amount": "0.0000"})
	data := encode(t, doc)

	c := registry.CheckManifest("tool.json", data, parseOpts(nil))
	assert.Equal(t, []string{
		"endpoint.origin: must use https; plain http is allowed only when the operator's config names an origin for station-readings (upstreams.station-readings)",
		"endpoint.query.units: {unit} names no property of inputSchema (it has limit, stationId, units)",
		"pricing.amount: must be more than 0 for a per_call tool",
	}, reasons(c.Errors))
	assert.Nil(t, c.Tool)
	assert.Nil(t, c.Credential, "the key was there")

	_, err := registry.ParseManifest("tool.json", data, parseOpts(nil))
	assert.Equal(t, c.Errors[0], manifestError(t, err))
}

// A manifest that does not fit the format gets every misfit, one per path.
func TestCheckManifestListsEveryMisfit(t *testing.T) {
	t.Parallel()
	doc := manifestDoc(t)
	doc["owner"] = "me"
	doc["version"] = "1"
	setPath(doc, "endpoint.method", "TRACE")
	c := registry.CheckManifest("tool.json", encode(t, doc), parseOpts(nil))
	require.Len(t, c.Errors, 3, "%q", reasons(c.Errors))
	assert.Equal(t, "owner", c.Errors[0].Path, "an unknown field first")
	assert.ElementsMatch(t, []string{"endpoint.method", "version"}, []string{c.Errors[1].Path, c.Errors[2].Path})
	for _, e := range c.Errors {
		assert.Equal(t, "tool.json", e.File)
	}
}

// A manifest that does not fit the format and has mistakes the format
// cannot see gets all of them in one check: the misfits first, then the
// rest. What a misfit already covers is not said twice.
func TestCheckManifestListsMisfitsAndMistakesTogether(t *testing.T) {
	t.Parallel()
	doc := manifestDoc(t)
	doc["owner"] = "me"
	setPath(doc, "pricing", map[string]any{"type": "per_call", "amount": "ten cents"})
	setPath(doc, "endpoint.query.units", "{unit}")
	setPath(doc, "endpoint.origin", "http://api.acme.test")
	c := registry.CheckManifest("tool.json", encode(t, doc), parseOpts(nil))
	assert.Equal(t, []string{
		"owner: is not a field of toolgate.tool/v1",
		`pricing.amount: must be a decimal amount in USD with at most 4 decimals, such as "0.0100"`,
		"endpoint.origin: must use https; plain http is allowed only when the operator's config names an origin for station-readings (upstreams.station-readings)",
		"endpoint.query.units: {unit} names no property of inputSchema (it has limit, stationId, units)",
	}, reasons(c.Errors))
	assert.Nil(t, c.Tool)

	// A value of the wrong kind is a misfit, and the checks still look at
	// the rest.
	doc = manifestDoc(t)
	doc["version"] = "1"
	setPath(doc, "endpoint.query.units", "{unit}")
	c = registry.CheckManifest("tool.json", encode(t, doc), parseOpts(nil))
	assert.Equal(t, []string{
		"version: must be an integer, not a string",
		"endpoint.query.units: {unit} names no property of inputSchema (it has limit, stationId, units)",
	}, reasons(c.Errors))

	// The server reports the first, and reads no credential for a manifest
	// it refuses.
	read := false
	_, err := registry.ParseManifest("tool.json", encode(t, doc), &registry.ParseOptions{
		LookupEnv: func(string) (string, bool) { read = true; return testSecret, true },
	})
	assert.Equal(t, c.Errors[0], manifestError(t, err))
	assert.False(t, read, "the credential of a refused manifest is not read")
}

// Checking needs no secret: a credential that cannot be read is told apart
// from the manifest's mistakes, and the tool is still described.
func TestCheckManifestWithoutTheSecret(t *testing.T) {
	t.Parallel()
	data := []byte(baseManifest)
	c := registry.CheckManifest("tool.json", data, &registry.ParseOptions{LookupEnv: noEnv})
	assert.Empty(t, c.Errors)
	require.NotNil(t, c.Credential)
	assert.Equal(t, "credential.env", c.Credential.Path)
	assert.Equal(t, "the environment variable ACME_API_KEY is not set", c.Credential.Reason)
	require.NotNil(t, c.Tool, "the tool is described without its key")

	withKey := parse(t, data)
	reg, other := registry.New(), registry.New()
	require.NoError(t, reg.Register(c.Tool))
	require.NoError(t, other.Register(withKey))
	v, err := reg.Lookup(c.Tool.Slug)
	require.NoError(t, err)
	w, err := other.Lookup(withKey.Slug)
	require.NoError(t, err)
	assert.Equal(t, w.Digest, v.Digest, "the digest does not depend on the key")

	// ParseManifest, as the server loads a manifest, still needs it.
	_, err = registry.ParseManifest("tool.json", data, &registry.ParseOptions{LookupEnv: noEnv})
	assert.Equal(t, c.Credential, manifestError(t, err))

	// With the key, nothing is wrong.
	ok := registry.CheckManifest("tool.json", data, parseOpts(nil))
	assert.Empty(t, ok.Errors)
	assert.Nil(t, ok.Credential)
	assert.NotNil(t, ok.Tool)
}

// A manifest with mistakes still says whether its credential could be
// read, and nothing it returns quotes the key.
func TestCheckManifestReadsTheCredentialAnyway(t *testing.T) {
	t.Parallel()
	doc := manifestDoc(t)
	setPath(doc, "endpoint.query.units", "{unit}")
	data := encode(t, doc)
	c := registry.CheckManifest("tool.json", data, &registry.ParseOptions{LookupEnv: noEnv})
	assert.Len(t, c.Errors, 1)
	require.NotNil(t, c.Credential)

	c = registry.CheckManifest("tool.json", data, parseOpts(nil))
	assert.Len(t, c.Errors, 1)
	assert.Nil(t, c.Credential)
	for _, e := range c.Errors {
		assert.NotContains(t, e.Error(), testSecret)
	}

	// A credential file given by a relative path is a mistake of the
	// manifest, not of its environment.
	setPath(doc, "credential", map[string]any{"header": "X-API-Key", "file": "keys/acme.key"})
	c = registry.CheckManifest("tool.json", encode(t, doc), parseOpts(nil))
	assert.Equal(t, []string{
		"endpoint.query.units: {unit} names no property of inputSchema (it has limit, stationId, units)",
		"credential.file: must be an absolute path",
	}, reasons(c.Errors))
	assert.Nil(t, c.Credential)
	assert.False(t, strings.Contains(strings.Join(reasons(c.Errors), ""), testSecret))
}
