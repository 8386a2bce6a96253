package recorded_test

import (
	"bytes"
	"compress/gzip"
	"flag"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/tools/recorded"
	"github.com/toolgate/toolgate/tools/recorded/internal/gen"
)

var update = flag.Bool("update", false, "rewrite the data sets under testdata from the generator")

// TestDataSetsAreReproducible rebuilds every data set and compares it with
// the embedded file, so the data can always be traced to the generator
// (and to the published samples it includes). With -update it rewrites
// the files instead.
func TestDataSetsAreReproducible(t *testing.T) {
	built, err := gen.Build(gen.Samples{
		USGSTwo:   recorded.Body(recorded.USGSTwoFeatures),
		USGSTen:   recorded.Body(recorded.USGSTenFeatures),
		OpenMeteo: recorded.Body(recorded.OpenMeteoCurrent),
	})
	require.NoError(t, err)
	for name, want := range built {
		path := filepath.Join("testdata", name)
		if *update {
			require.NoError(t, os.WriteFile(path, gzipped(t, want), 0o644))
			continue
		}
		compressed, err := os.ReadFile(path)
		require.NoError(t, err, "run go test -run TestDataSetsAreReproducible -update to create it")
		zr, err := gzip.NewReader(bytes.NewReader(compressed))
		require.NoError(t, err)
		got, err := io.ReadAll(zr)
		require.NoError(t, err)
		assert.True(t, bytes.Equal(want, got), "%s differs from what the generator builds; run with -update after changing the generator", name)
	}
}

func gzipped(t *testing.T, b []byte) []byte {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	require.NoError(t, err)
	_, err = zw.Write(b)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return buf.Bytes()
}
