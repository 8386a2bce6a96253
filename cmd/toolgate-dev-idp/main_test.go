package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRefusesToListenBeyondLoopback: the provider signs anyone in as
// anyone, so an address other machines reach is refused before anything
// listens, with exit 2 and one line naming the flag.
func TestRefusesToListenBeyondLoopback(t *testing.T) {
	t.Parallel()
	users := filepath.Join(t.TempDir(), "users.json")
	require.NoError(t, os.WriteFile(users, []byte(`{"audience": "http://127.0.0.1:8080/mcp", "users": [{"id": "ann"}]}`), 0o600))
	for _, addr := range []string{"0.0.0.0:8090", ":8090", "[::]:8090", "192.168.1.20:8090"} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), []string{"-users", users, "-listen", addr}, &stdout, &stderr)
		assert.Equal(t, 2, code, addr)
		assert.Empty(t, stdout.String(), addr)
		assert.Equal(t, 1, strings.Count(stderr.String(), "\n"), "one line: %q", stderr.String())
		assert.Contains(t, stderr.String(), "-listen "+addr+": not a loopback address")
	}
}

func TestRefusesBadUsage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"audience": "http://127.0.0.1:8080/mcp", "users": [{"id": "ann"}, {"id": "ann"}]}`), 0o600))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "-users is required"},
		{[]string{"-users", filepath.Join(dir, "missing.json")}, "missing.json"},
		{[]string{"-users", bad}, `users[1].id: "ann" is users[0] already`},
		{[]string{"-users", bad, "-token-lifetime", "0s"}, "-token-lifetime must be positive"},
		{[]string{"-users", bad, "extra"}, `unexpected argument "extra"`},
	} {
		var stdout, stderr bytes.Buffer
		assert.Equal(t, 2, run(context.Background(), tc.args, &stdout, &stderr), "%v", tc.args)
		assert.Contains(t, stderr.String(), tc.want, "%v", tc.args)
		assert.Equal(t, 1, strings.Count(stderr.String(), "\n"), "one line: %q", stderr.String())
	}
}
