package jcs_test

import (
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/jcs"
)

// One Buffer used for document after document, refused ones among them,
// answers each exactly as a fresh Canonicalize does: nothing of the last
// document, nor of a refusal half-way, shows in the next.
func TestBufferReusedGivesTheSameBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var b jcs.Buffer
	for i := range 2000 {
		doc, err := json.Marshal(randomValue(rng, 0))
		require.NoError(t, err)
		if i%7 == 0 {
			doc = doc[:len(doc)/2] // mostly cut short: refused
		}
		want, wantErr := jcs.Canonicalize(doc)
		got, err := b.Canonicalize(doc)
		if wantErr != nil {
			require.ErrorIs(t, err, jcs.ErrNotCanonicalizable, "%q", doc)
			require.Nil(t, got)
			continue
		}
		require.NoError(t, err, "%q", doc)
		require.Equal(t, string(want), string(got), "%q", doc)
	}
	require.Positive(t, b.Cap())
}
