package main

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/testproc"
)

// TestREADMEBudgetRefusalExample runs the server on the README's budgets
// example (in memory and offline, with no identity provider or webhook
// to reach, and a daily limit the second call passes) and compares the
// refusal it answers with the README's: the same members at every level,
// the same code, and the same message and violation but for the amounts.
func TestREADMEBudgetRefusalExample(t *testing.T) {
	t.Parallel()
	section := readmeSection(t, "Budgets for teams and the organization")
	_, example, found := strings.Cut(section, "```json\n")
	require.True(t, found, "the section has a config example")
	example, rest, _ := strings.Cut(example, "```")
	_, refusal, found := strings.Cut(rest, "A refused call is")
	require.True(t, found, "the section shows a refused call")
	_, refusal, found = strings.Cut(refusal, "```json\n")
	require.True(t, found)
	refusal, _, _ = strings.Cut(refusal, "```")

	var cfg map[string]any
	require.NoError(t, json.Unmarshal([]byte(example), &cfg))
	for _, field := range []string{"storage", "oauth", "approvals"} {
		require.Contains(t, cfg, field)
		delete(cfg, field)
	}
	cfg["listen"] = "127.0.0.1:0"
	team := cfg["budgets"].([]any)[1].(map[string]any)
	require.Equal(t, "search-team", team["id"])
	delete(team, "claims") // they need the identity provider, as the "*" template does
	cfg["principals"] = slices.DeleteFunc(cfg["principals"].([]any), func(p any) bool { return p.(map[string]any)["id"] == "*" })
	team["dailyLimitUsd"] = "0.2000"
	alice := cfg["principals"].([]any)[0].(map[string]any)
	require.Equal(t, "alice", alice["id"])
	c := client{t: t, key: alice["apiKeys"].([]any)[0].(string)}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stdout, stderr := &testproc.SyncBuffer{}, &testproc.SyncBuffer{}
	exited := make(chan int, 1)
	path := writeConfig(t, cfg)
	go func() { exited <- run(ctx, []string{"-config", path, "-offline"}, noEnv, stdout, stderr) }()
	p := &process{t: t, stdout: stdout, stderr: stderr, exited: make(chan struct{})}
	defer func() {
		if t.Failed() {
			t.Logf("stderr: %s", stderr.String())
		}
	}()
	c.base = strings.TrimPrefix(p.waitLine("toolgate listening on ", 10*time.Second), "toolgate listening on ")

	input := map[string]any{"goal": "reach the summit", "step": 1}
	quoteID, digest, _ := c.quote("goal-data")
	first := c.call("goal-data", quoteID, digest, "readme-refusal-1", input)
	require.Equal(t, http.StatusOK, first.status, "%s", first.body)
	quoteID, digest, _ = c.quote("goal-data")
	second := c.call("goal-data", quoteID, digest, "readme-refusal-2", input)
	require.Equal(t, http.StatusForbidden, second.status, "%s", second.body)

	var want, got map[string]any
	require.NoError(t, json.Unmarshal([]byte(refusal), &want), "the README's refusal is JSON")
	require.NoError(t, json.Unmarshal(second.body, &got))
	assert.Equal(t, memberPaths(want, ""), memberPaths(got, ""), "the same members: %s", second.body)
	amounts := regexp.MustCompile(`\$\d+\.\d{4}`)
	for _, field := range []string{"code", "message"} {
		assert.Equal(t, amounts.ReplaceAllString(want["error"].(map[string]any)[field].(string), "$$X"),
			amounts.ReplaceAllString(got["error"].(map[string]any)[field].(string), "$$X"), field)
	}
	assert.Equal(t, mustString(t, want["error"].(map[string]any)["violations"], amounts),
		mustString(t, got["error"].(map[string]any)["violations"], amounts))
	wb, gb := want["error"].(map[string]any)["budget"].(map[string]any), got["error"].(map[string]any)["budget"].(map[string]any)
	for _, field := range []string{"id", "window"} {
		assert.Equal(t, wb[field], gb[field], field)
	}
	cancel()
	assert.Equal(t, 0, <-exited, "%s", stderr.String())
}

// memberPaths lists the member names of v at every level of objects, as
// dotted paths.
func memberPaths(v any, prefix string) []string {
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	var out []string
	for k, child := range m {
		out = append(out, prefix+k)
		out = append(out, memberPaths(child, prefix+k+".")...)
	}
	slices.Sort(out)
	return out
}

// mustString is v as JSON with its amounts replaced.
func mustString(t *testing.T, v any, amounts *regexp.Regexp) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return amounts.ReplaceAllString(string(b), "$$X")
}
