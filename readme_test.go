package toolgate_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestREADMEEmbedSnippet builds the README's "Embed it" snippet into a
// program and runs it on a callable tool and on a blocked one: the first
// call completes, and the blocked tool is an error that names it and why,
// not a panic on the digest a blocked tool's quote does not have.
//
// Two things are changed, each checked to be there: the config, so that
// providers are answered from recorded responses rather than the network,
// and the tool's slug, which becomes the program's argument.
func TestREADMEEmbedSnippet(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program with the go tool")
	}
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	_, section, found := strings.Cut(string(readme), "\n## Embed it\n")
	require.True(t, found, "the README has a section on embedding")
	_, snippet, found := strings.Cut(section, "```go\n")
	require.True(t, found, "the section has a Go snippet")
	snippet, _, _ = strings.Cut(snippet, "```")

	program := embedProgram(t, snippet)
	bin := buildOverlaid(t, "internal/readmeembed", program)

	out, err := exec.Command(bin, "earthquake-search").CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Equal(t, "completed\n", string(out))

	out, err = exec.Command(bin, "current-weather").CombinedOutput()
	require.Error(t, err, "a blocked tool is an error: %s", out)
	assert.NotContains(t, string(out), "panic", "the snippet checks the quote before using its digest")
	assert.Contains(t, string(out), "current-weather")
	assert.Contains(t, string(out), "tool does not yet have an immutable version", "the error says why")
}

// embedProgram makes a main package of the snippet: its imports, and its
// statements as the body of a function that returns an error, run on the
// tool named by the program's argument, printing the call's status.
func embedProgram(t *testing.T, snippet string) string {
	t.Helper()
	_, imports, found := strings.Cut(snippet, "import (\n")
	require.True(t, found, "the snippet imports what it uses")
	imports, body, found := strings.Cut(imports, "\n)\n")
	require.True(t, found)

	const liveConfig = "toolgate.New(memory.New(), nil)"
	require.Contains(t, body, liveConfig, "the snippet makes a gateway with the default config")
	body = strings.Replace(body, liveConfig, "toolgate.New(memory.New(), &toolgate.Config{Transport: recorded.Transport()})", 1)
	const slug = `"earthquake-search"`
	require.Contains(t, body, slug, "the snippet calls earthquake-search")
	body = strings.ReplaceAll(body, slug, "tool")

	lines := strings.Split(imports, "\n")
	for _, pkg := range []string{`"context"`, `"encoding/json"`, `"fmt"`, `"os"`, `"github.com/toolgate/toolgate/tools/recorded"`} {
		if !slices.ContainsFunc(lines, func(l string) bool { return strings.HasSuffix(strings.TrimSpace(l), pkg) }) {
			lines = append(lines, "\t"+pkg)
		}
	}
	return "package main\n\nimport (\n" + strings.Join(lines, "\n") + "\n)\n\n" +
		"var _ = json.Valid // for a snippet that sends no input\n\n" +
		"func run(ctx context.Context, tool string) error {\n" + body +
		"\tif err != nil {\n\t\treturn err\n\t}\n\tfmt.Println(res.Execution.Status)\n\treturn nil\n}\n\n" +
		"func main() {\n\tif err := run(context.Background(), os.Args[1]); err != nil {\n" +
		"\t\tfmt.Fprintln(os.Stderr, err)\n\t\tos.Exit(1)\n\t}\n}\n"
}

// buildOverlaid builds program as the main package at dir, a directory of
// the module that exists only in the build's overlay, so that it imports
// this module's packages without a file written into the source tree.
func buildOverlaid(t *testing.T, dir, program string) string {
	t.Helper()
	tmp := t.TempDir()
	source := filepath.Join(tmp, "main.go")
	require.NoError(t, os.WriteFile(source, []byte(program), 0o600))
	root, err := filepath.Abs(".")
	require.NoError(t, err)
	overlay, err := json.Marshal(map[string]map[string]string{"Replace": {filepath.Join(root, dir, "main.go"): source}})
	require.NoError(t, err)
	overlayFile := filepath.Join(tmp, "overlay.json")
	require.NoError(t, os.WriteFile(overlayFile, overlay, 0o600))
	bin := filepath.Join(tmp, "embed")
	out, err := exec.Command("go", "build", "-overlay", overlayFile, "-o", bin, "./"+dir).CombinedOutput()
	require.NoError(t, err, "the snippet builds:\n%s\n%s", out, program)
	return bin
}
