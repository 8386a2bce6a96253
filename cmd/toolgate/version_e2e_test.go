package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestVersionOfABuildFromAClone: "go build" in a git checkout of toolgate
// gives a binary whose "toolgate version" names the commit it was built
// from, says when the checkout had changes not committed, and keeps a
// version set with -ldflags.
func TestVersionOfABuildFromAClone(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("copies the repository and builds the binary three times")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	clone := copyCheckout(t)
	git(t, clone, "init", "-q")
	git(t, clone, "add", "-A")
	git(t, clone, "-c", "user.name=toolgate", "-c", "user.email=toolgate@example.com", "commit", "-q", "-m", "a clone")
	commit := git(t, clone, "rev-parse", "--short=12", "HEAD")

	version := func(ldflags ...string) string {
		t.Helper()
		bin := filepath.Join(t.TempDir(), "toolgate")
		args := append([]string{"build", "-o", bin}, ldflags...)
		build := exec.Command("go", append(args, "./cmd/toolgate")...)
		build.Dir = clone
		// Whatever the machine's go env says, this build records its
		// checkout, as a build on a user's clone does.
		build.Env = append(os.Environ(), "GOFLAGS=-buildvcs=true", "GOWORK=off")
		out, err := build.CombinedOutput()
		require.NoError(t, err, "%s", out)
		out, err = exec.Command(bin, "version").Output()
		require.NoError(t, err)
		return string(out)
	}

	got := version()
	assert.Regexp(t, `^toolgate \S*`+commit+`\S* go1\.\S+\n$`, got, "the commit it was built from")
	assert.NotContains(t, got, "dirty")
	assert.NotContains(t, got, "modified")

	require.NoError(t, os.WriteFile(filepath.Join(clone, "NOTES"), []byte("not committed\n"), 0o600))
	got = version()
	assert.Contains(t, got, commit)
	assert.Regexp(t, `\+dirty|\(modified\)`, got, "changes not committed are said")

	got = version("-ldflags", "-X main.version=v9.8.7")
	assert.Regexp(t, `^toolgate v9\.8\.7 `+commit+` \(modified\) go1\.\S+\n$`, got, "a version set at build comes first")
}

// copyCheckout copies the files of the repository that git would commit,
// as they are now, into a new directory without its history.
func copyCheckout(t *testing.T) string {
	t.Helper()
	root := git(t, "../..", "rev-parse", "--show-toplevel")
	files := strings.Split(git(t, root, "ls-files", "-z", "--cached", "--others", "--exclude-standard"), "\x00")
	dir := t.TempDir()
	for _, f := range files {
		if f == "" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(root, f))
		if os.IsNotExist(err) {
			continue // deleted and not yet committed
		}
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Join(dir, filepath.Dir(f)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), data, 0o644))
	}
	return dir
}

// git runs git in dir and returns its output, trimmed.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	require.NoError(t, err, "git %v", args)
	return strings.TrimRight(string(out), "\n")
}
