package registry_test

import (
	"errors"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/registry"
)

// manifestFS is a directory of manifests: station-readings versions 1 and
// 2, and a second tool, plus a file that is not a manifest.
func manifestFS(t *testing.T) fstest.MapFS {
	t.Helper()
	v2 := manifestDoc(t)
	v2["version"] = 2
	v2["description"] = "Latest readings, now with units"
	other := manifestDoc(t)
	other["slug"] = "station-list"
	other["name"] = "Station List"
	return fstest.MapFS{
		"tools/readings-v2.json": {Data: encode(t, v2)},
		"tools/readings.json":    {Data: []byte(baseManifest)},
		"tools/stations.json":    {Data: encode(t, other)},
		"tools/README.md":        {Data: []byte("# not a manifest")},
	}
}

func TestLoadManifests(t *testing.T) {
	t.Parallel()
	reg := registry.New()
	vs, err := reg.LoadManifests(manifestFS(t), []string{"tools/*.json", "tools/readings.json"}, parseOpts(nil))
	require.NoError(t, err)

	var loaded []string
	for _, v := range vs {
		loaded = append(loaded, v.Tool.Slug+"@"+string(rune('0'+v.Tool.Version)))
		assert.Regexp(t, digestPattern, v.Digest)
	}
	assert.Equal(t, []string{"station-readings@2", "station-readings@1", "station-list@1"}, loaded,
		"in file order, each file once though two patterns match it")

	cur, err := reg.Lookup("station-readings")
	require.NoError(t, err)
	assert.Equal(t, 2, cur.Tool.Version, "the highest version is current")
	history, err := reg.Versions("station-readings")
	require.NoError(t, err)
	assert.Len(t, history, 2)
}

// TestLoadManifestsErrors: one bad file, and nothing is registered.
func TestLoadManifestsErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		files    func(fs fstest.MapFS)
		patterns []string
		prepare  func(t *testing.T, reg *registry.Registry)
		file     string
		path     string
		reason   string
		sentinel error
	}{
		{name: "a bad manifest among good ones", files: func(fs fstest.MapFS) {
			fs["tools/zz-bad.json"] = &fstest.MapFile{Data: []byte(`{"schemaVersion":"toolgate.tool/v1","slug":"x","extra":1}`)}
		}, patterns: []string{"tools/*.json"}, file: "tools/zz-bad.json", path: "extra", reason: "is not a field"},
		{name: "the same version twice", files: func(fs fstest.MapFS) {
			fs["tools/readings-copy.json"] = &fstest.MapFile{Data: []byte(baseManifest)}
		}, patterns: []string{"tools/*.json"}, file: "tools/readings.json", path: "version",
			reason: "station-readings version 1 is also defined by tools/readings-copy.json"},
		{name: "a version not above the registered one", patterns: []string{"tools/readings.json"},
			prepare: func(t *testing.T, reg *registry.Registry) {
				tool := parse(t, []byte(baseManifest))
				tool.Version = 3
				require.NoError(t, reg.Register(tool))
			},
			file: "tools/readings.json", path: "version", reason: "station-readings version 3 is already registered"},
		{name: "a pattern matching nothing", patterns: []string{"tools/*.json", "tool/*.json"}, sentinel: registry.ErrNoManifests},
		{name: "a malformed pattern", patterns: []string{"tools/[.json"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fsys := manifestFS(t)
			if tt.files != nil {
				tt.files(fsys)
			}
			reg := registry.New()
			if tt.prepare != nil {
				tt.prepare(t, reg)
			}
			before, _ := reg.List("", 100, 0)
			_, err := reg.LoadManifests(fsys, tt.patterns, parseOpts(nil))
			require.Error(t, err)
			switch {
			case tt.sentinel != nil:
				assert.True(t, errors.Is(err, tt.sentinel), "%v", err)
			case tt.file != "":
				me := manifestError(t, err)
				assert.Equal(t, tt.file, me.File)
				assert.Equal(t, tt.path, me.Path)
				assert.Contains(t, me.Reason, tt.reason)
			}
			after, _ := reg.List("", 100, 0)
			assert.Equal(t, before, after, "nothing registered")
		})
	}
}
