package mcpupstream_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/mcpupstream"
)

func TestPinsFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "toolgate.pins.json")
	none, err := mcpupstream.ReadPins(path)
	require.NoError(t, err, "no file: no pins")
	require.Empty(t, none.Tools)

	manifest := func(description, schema string) json.RawMessage {
		return json.RawMessage(`{"name":"Echo","description":"` + description + `","pricing":{"amount":"0.0000"},` +
			`"upstream":{"server":"up","address":"srv","tool":{"name":"echo","description":"` + description + `","inputSchema":` + schema + `}}}`)
	}
	old := &mcpupstream.Pins{Tools: map[string]mcpupstream.Pin{
		"up.echo": {Digest: "sha256:1", Manifest: manifest("Echoes.", `{"type":"object"}`)},
		"up.gone": {Digest: "sha256:2", Manifest: manifest("Gone.", `{}`)},
		"up.same": {Digest: "sha256:3", Manifest: manifest("Same.", `{}`)},
	}}
	require.NoError(t, old.Write(path))
	read, err := mcpupstream.ReadPins(path)
	require.NoError(t, err)
	require.Equal(t, "sha256:1", read.Tools["up.echo"].Digest)
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Contains(t, string(raw), `"schemaVersion": "toolgate.mcp-pins/v1"`)

	next := &mcpupstream.Pins{Tools: map[string]mcpupstream.Pin{
		"up.echo": {Digest: "sha256:9", Manifest: manifest("Echoes, and more.", `{"type":"object","required":["x"]}`)},
		"up.new":  {Digest: "sha256:4", Manifest: manifest("New.", `{}`)},
		"up.same": {Digest: "sha256:3", Manifest: manifest("Same.", `{}`)},
	}}
	require.Equal(t, []mcpupstream.Change{
		{Kind: mcpupstream.Changed, Slug: "up.echo", Fields: []string{"description", "upstream.tool.description", "upstream.tool.inputSchema"}},
		{Kind: mcpupstream.Removed, Slug: "up.gone"},
		{Kind: mcpupstream.Added, Slug: "up.new"},
	}, mcpupstream.Diff(read, next))

	require.NoError(t, os.WriteFile(path, []byte(`{"schemaVersion":"something else","tools":{}}`), 0o600))
	_, err = mcpupstream.ReadPins(path)
	require.ErrorContains(t, err, "schemaVersion")
	require.NoError(t, os.WriteFile(path, []byte(`{"schemaVersion":"toolgate.mcp-pins/v1","tools":{},"extra":1}`), 0o600))
	_, err = mcpupstream.ReadPins(path)
	require.Error(t, err)
}
