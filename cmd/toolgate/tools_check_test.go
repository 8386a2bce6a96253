package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/registry"
)

// examplesDir holds the example manifests the tests load and change.
const examplesDir = "../../examples/tools"

// exampleManifest returns an example manifest decoded, for a test to change.
func exampleManifest(t *testing.T, name string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(examplesDir, name))
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(data, &doc))
	return doc
}

// writeManifest writes doc (a map, or raw bytes) to dir/name.
func writeManifest(t *testing.T, dir, name string, doc any) string {
	t.Helper()
	data, ok := doc.([]byte)
	if !ok {
		var err error
		data, err = json.MarshalIndent(doc, "", "  ")
		require.NoError(t, err)
	}
	path := filepath.Join(dir, name)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, data, 0o600))
	return path
}

// servedDigest is the digest a registry gives the manifest at path, served
// from origin when it is not empty.
func servedDigest(t *testing.T, path, origin string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var doc struct{ Slug string }
	require.NoError(t, json.Unmarshal(data, &doc))
	// The digest does not depend on the credential's value: any will do.
	opts := &registry.ParseOptions{LookupEnv: func(string) (string, bool) { return "any-key", true }}
	if origin != "" {
		opts.OperatorOrigins = map[string]string{doc.Slug: origin}
	}
	tool, err := registry.ParseManifest(path, data, opts)
	require.NoError(t, err)
	reg := registry.New()
	require.NoError(t, reg.Register(tool))
	if origin != "" {
		require.NoError(t, reg.SetOrigin(tool.Slug, origin))
	}
	v, err := reg.Lookup(tool.Slug)
	require.NoError(t, err)
	return v.Digest
}

func runCheck(args ...string) (code int, stdout, stderr string) {
	var out, errs bytes.Buffer
	code = run(context.Background(), append([]string{"tools", "check"}, args...), noEnv, &out, &errs)
	return code, out.String(), errs.String()
}

// TestToolsCheck: each good manifest gives "slug version digest" on
// stdout, each bad one a line naming file, path and reason on stderr, and
// the exit code says whether all were good.
func TestToolsCheck(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := filepath.Join(examplesDir, "air-quality.json")
	goodDigest := servedDigest(t, good, "")

	plain := exampleManifest(t, "air-quality.json")
	plain["endpoint"].(map[string]any)["origin"] = "http://127.0.0.1:9000"
	plainPath := writeManifest(t, dir, "plain-http.json", plain)

	clash := exampleManifest(t, "air-quality.json")
	clash["slug"] = "exchange-rates"
	clashPath := writeManifest(t, dir, "clash.json", clash)

	code, stdout, stderr := runCheck(good)
	assert.Equal(t, 0, code, stderr)
	assert.Equal(t, "air-quality 1 "+goodDigest+"\n", stdout)
	assert.Empty(t, stderr)

	code, stdout, stderr = runCheck(good, plainPath, filepath.Join(dir, "nope.json"), clashPath)
	assert.Equal(t, 1, code)
	assert.Equal(t, "air-quality 1 "+goodDigest+"\n", stdout, "the good one is still reported")
	assert.Equal(t, []string{
		"toolgate: " + plainPath + ": endpoint.origin: must use https; plain http is allowed only when the operator's config names an origin for air-quality (upstreams.air-quality)",
		"toolgate: " + filepath.Join(dir, "nope.json") + ": cannot read the file: no such file",
		"toolgate: " + clashPath + ": version: exchange-rates version 1 is already registered; a manifest can only add a higher version",
	}, strings.Split(strings.TrimSuffix(stderr, "\n"), "\n"))
}

// TestToolsCheckWithConfig: the config's upstreams apply as on the server:
// a plain-HTTP origin they name is accepted, and the digest printed is the
// one the server serves.
func TestToolsCheckWithConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	plain := exampleManifest(t, "air-quality.json")
	plain["endpoint"].(map[string]any)["origin"] = "http://127.0.0.1:9000"
	plainPath := writeManifest(t, dir, "plain-http.json", plain)
	config := writeManifest(t, dir, "toolgate.json", map[string]any{
		"upstreams": map[string]any{"air-quality": "http://127.0.0.1:9001"},
	})

	code, stdout, stderr := runCheck("-config", config, plainPath)
	assert.Equal(t, 0, code, stderr)
	served := servedDigest(t, plainPath, "http://127.0.0.1:9001")
	assert.Equal(t, "air-quality 1 "+served+"\n", stdout)
}

// TestToolsCheckWithoutBuiltinTools: with a config whose "builtinTools"
// is false, a manifest may take a built-in tool's slug, as on the server;
// without it, that is a clash.
func TestToolsCheckWithoutBuiltinTools(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	doc := exampleManifest(t, "air-quality.json")
	doc["slug"] = "exchange-rates"
	path := writeManifest(t, dir, "rates.json", doc)
	config := writeManifest(t, dir, "toolgate.json", map[string]any{"builtinTools": false})

	code, _, stderr := runCheck(path)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "exchange-rates version 1 is already registered")

	code, stdout, stderr := runCheck("-config", config, path)
	assert.Equal(t, 0, code, stderr)
	assert.Regexp(t, `^exchange-rates 1 sha256:[0-9a-f]{64}\n$`, stdout)
}

func TestToolsCheckUsage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"tools", "check"}, "toolgate tools check: name at least one manifest file (see toolgate help tools check)\n"},
		{[]string{"tools", "check", "-nope", "x.json"}, "toolgate tools check: flag provided but not defined: -nope (see toolgate help tools check)\n"},
		{[]string{"tools", "check", "-config", "/nonexistent/toolgate.json", "x.json"}, "toolgate: /nonexistent/toolgate.json: config: cannot read the config file: open /nonexistent/toolgate.json: no such file or directory\n"},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		assert.Equal(t, 2, run(context.Background(), tt.args, noEnv, &stdout, &stderr), "%v", tt.args)
		assert.Equal(t, tt.want, stderr.String())
		assert.Empty(t, stdout.String())
	}
}

// TestToolsCheckNeedsNoSecret: the README's example manifests check on a
// machine where their credentials are not set: each is described, and
// each credential not set is a warning, exit 0; -strict makes it a
// mistake.
func TestToolsCheckNeedsNoSecret(t *testing.T) {
	t.Parallel()
	manifests, err := filepath.Glob(filepath.Join(examplesDir, "*.json"))
	require.NoError(t, err)
	require.Len(t, manifests, 3)

	code, stdout, stderr := runCheck(manifests...)
	assert.Equal(t, 0, code, stderr)
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	require.Len(t, lines, 3, "every manifest is described: %s", stdout)
	for i, m := range manifests {
		assert.Regexp(t, `^[a-z-]+ 1 sha256:[0-9a-f]{64}$`, lines[i])
		assert.Equal(t, servedDigest(t, m, ""), strings.Fields(lines[i])[2], "the digest is the server's, key or no key")
	}
	assert.Equal(t, []string{
		"toolgate: warning: " + filepath.Join(examplesDir, "movie-search.json") + ": credential.env: the environment variable TMDB_READ_ACCESS_TOKEN is not set (the server refuses this manifest until it can read its credential)",
		"toolgate: warning: " + filepath.Join(examplesDir, "openaq-latest.json") + ": credential.env: the environment variable OPENAQ_API_KEY is not set (the server refuses this manifest until it can read its credential)",
	}, strings.Split(strings.TrimSuffix(stderr, "\n"), "\n"))

	code, stdout, stderr = runCheck(append([]string{"-strict"}, manifests...)...)
	assert.Equal(t, 1, code)
	assert.Equal(t, "air-quality 1 "+servedDigest(t, manifests[0], "")+"\n", stdout)
	assert.Equal(t, []string{
		"toolgate: " + filepath.Join(examplesDir, "movie-search.json") + ": credential.env: the environment variable TMDB_READ_ACCESS_TOKEN is not set",
		"toolgate: " + filepath.Join(examplesDir, "openaq-latest.json") + ": credential.env: the environment variable OPENAQ_API_KEY is not set",
	}, strings.Split(strings.TrimSuffix(stderr, "\n"), "\n"))

	// With the key set, there is nothing to warn of, and nothing of the
	// key is printed.
	const secret = "tg-check-secret-5d1e0a77"
	var out, errs bytes.Buffer
	env := func(name string) string {
		if name == "TMDB_READ_ACCESS_TOKEN" {
			return secret
		}
		return ""
	}
	code = run(context.Background(), []string{"tools", "check", "-strict", manifests[1]}, env, &out, &errs)
	assert.Equal(t, 0, code, errs.String())
	assert.Empty(t, errs.String())
	assert.NotContains(t, out.String(), secret)
}

// TestToolsCheckListsEveryMistake: a manifest with three mistakes gets
// three lines, in the order the server meets them, and exit 1.
func TestToolsCheckListsEveryMistake(t *testing.T) {
	t.Parallel()
	doc := exampleManifest(t, "air-quality.json")
	endpoint := doc["endpoint"].(map[string]any)
	endpoint["origin"] = "http://air-quality.example"
	query := endpoint["query"].(map[string]any)
	var first string
	for name := range query {
		if first == "" || name < first {
			first = name
		}
	}
	query[first] = "{nowhere}"
	doc["pricing"] = map[string]any{"type": "per_call", "amount": "0"}
	path := writeManifest(t, t.TempDir(), "three.json", doc)

	code, stdout, stderr := runCheck(path)
	assert.Equal(t, 1, code)
	assert.Empty(t, stdout)
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	require.Len(t, lines, 3, "%s", stderr)
	assert.Equal(t, "toolgate: "+path+": endpoint.origin: must use https; plain http is allowed only when the operator's config names an origin for air-quality (upstreams.air-quality)", lines[0])
	assert.True(t, strings.HasPrefix(lines[1], "toolgate: "+path+": endpoint.query."+first+": {nowhere} names no property of inputSchema"), lines[1])
	assert.Equal(t, "toolgate: "+path+": pricing.amount: must be more than 0 for a per_call tool", lines[2])
}

// TestToolsCheckListsMisfitsAndMistakesInOneRun: a manifest with an
// unknown field, an amount that is no amount, a placeholder naming no
// input field and a plain-HTTP origin gets four lines in one run, each
// with its path, not two now and two once those are fixed.
func TestToolsCheckListsMisfitsAndMistakesInOneRun(t *testing.T) {
	t.Parallel()
	doc := exampleManifest(t, "air-quality.json")
	doc["owner"] = "me"
	doc["pricing"] = map[string]any{"type": "per_call", "amount": "ten cents"}
	endpoint := doc["endpoint"].(map[string]any)
	endpoint["origin"] = "http://air-quality.example"
	endpoint["query"].(map[string]any)["latitude"] = "{lat}"
	path := writeManifest(t, t.TempDir(), "four.json", doc)

	code, stdout, stderr := runCheck(path)
	assert.Equal(t, 1, code)
	assert.Empty(t, stdout)
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	require.Len(t, lines, 4, "%s", stderr)
	assert.Equal(t, "toolgate: "+path+": owner: is not a field of toolgate.tool/v1", lines[0])
	assert.Equal(t, "toolgate: "+path+`: pricing.amount: must be a decimal amount in USD with at most 4 decimals, such as "0.0100"`, lines[1])
	assert.Equal(t, "toolgate: "+path+": endpoint.origin: must use https; plain http is allowed only when the operator's config names an origin for air-quality (upstreams.air-quality)", lines[2])
	assert.True(t, strings.HasPrefix(lines[3], "toolgate: "+path+": endpoint.query.latitude: {lat} names no property of inputSchema"), lines[3])
}

// TestREADMEManifestExample keeps the README's manifest example valid, and
// its example of a start-up error true.
func TestREADMEManifestExample(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	_, section, found := strings.Cut(string(readme), "\n## Adding a tool by manifest\n")
	require.True(t, found, "the README has a section on manifests")
	_, example, found := strings.Cut(section, "```json\n")
	require.True(t, found, "the section has a manifest example")
	example, _, _ = strings.Cut(example, "```")

	opts := &registry.ParseOptions{LookupEnv: func(string) (string, bool) { return "a-token", true }}
	_, err = registry.ParseManifest("movies.json", []byte(example), opts)
	require.NoError(t, err)

	misspelt := strings.Replace(example, `"year": "{year}"`, `"year": "{yaer}"`, 1)
	_, err = registry.ParseManifest("/etc/toolgate/tools/movies.json", []byte(misspelt), opts)
	require.Error(t, err)
	assert.Contains(t, section, "`toolgate: "+err.Error()+"`")
}
