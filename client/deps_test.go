package client_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// An agent that only talks to a remote gateway links the client, the
// vocabulary, the standard library, uuid and decimal: none of the engine,
// the stores, the server, metrics or tracing.
func TestClientLinksOnlyTheVocabulary(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	allowed := map[string]bool{
		"github.com/toolgate/toolgate/client":       true,
		"github.com/toolgate/toolgate/toolgatetype": true,
		// The one Retry-After parser and the one URL check, shared with
		// the gateway; they import only the standard library.
		"github.com/toolgate/toolgate/internal/retryafter": true,
		"github.com/toolgate/toolgate/internal/weburl":     true,
		"github.com/google/uuid":                           true,
		"github.com/shopspring/decimal":                    true,
	}
	var outside []string
	for _, pkg := range strings.Fields(string(out)) {
		first, _, _ := strings.Cut(pkg, "/")
		standard := !strings.Contains(first, ".") // the standard library, vendored parts included
		if !standard && !allowed[pkg] {
			outside = append(outside, pkg)
		}
	}
	require.Empty(t, outside, "the client links packages outside the standard library, the vocabulary, uuid and decimal")
}
