package toolgate_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const module = "github.com/toolgate/toolgate"

// goList runs go list with args in the module's root and returns its lines.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list"}, args...)...).CombinedOutput()
	require.NoError(t, err, "%s", out)
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// The conformance suite stands alone: a user who checks a fake store with
// storagetest.Run links the contract and the vocabulary, not the gateway
// (the benchmark that drives a gateway lives in toolgatetest).
func TestStoragetestLinksOnlyTheContract(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	allowed := map[string]bool{
		module + "/storage/storagetest": true,
		module + "/storage":             true,
		module + "/toolgatetype":        true,
	}
	var outside []string
	for _, pkg := range goList(t, "-deps", "./storage/storagetest") {
		if (pkg == module || strings.HasPrefix(pkg, module+"/")) && !allowed[pkg] {
			outside = append(outside, pkg)
		}
	}
	assert.Empty(t, outside, "storagetest links toolgate packages beyond storage and toolgatetype")
}

// The doors (the JSON API, the approval pages, the tool documentation, the
// MCP server) reach the store only through the gateway, which hands them
// complete answers in the vocabulary's types. They still link storage, as
// the gateway does (toolgate.New takes a storage.Store) and as the fleet's
// shared state does (authlimit's counts, sealing's keys), so what is
// checked is that no door imports it itself.
func TestDoorsDoNotImportTheStore(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	lines := goList(t, "-f", "{{.ImportPath}} {{join .Imports \" \"}}",
		"./approvalpage", "./httpapi", "./tooldocs", "./mcpserver")
	require.Len(t, lines, 4)
	for _, line := range lines {
		door, imports, _ := strings.Cut(line, " ")
		for _, pkg := range strings.Fields(imports) {
			assert.False(t, pkg == module+"/storage" || strings.HasPrefix(pkg, module+"/storage/"),
				"%s imports %s", door, pkg)
		}
	}
}

// The server's binary carries no identity provider: the development one
// is a program of its own (cmd/toolgate-dev-idp), and the server speaks
// to identity providers only as their client.
func TestServerBinaryCarriesNoIdentityProvider(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	for _, pkg := range goList(t, "-deps", "./cmd/toolgate") {
		assert.NotEqual(t, module+"/internal/devidp", pkg)
		assert.NotEqual(t, "github.com/zitadel/oidc/v3/pkg/op", pkg, "the server links an OpenID provider")
	}
	assert.Contains(t, goList(t, "-deps", "./cmd/toolgate-dev-idp"), module+"/internal/devidp")
}
