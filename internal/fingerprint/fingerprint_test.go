package fingerprint

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/registry"
)

// The call path writes a few things faster than the general code would;
// each must give exactly the same bytes, since they are stored, compared
// with earlier calls' and returned byte for byte on replay.

// canonicalFingerprint is the fingerprint's definition, computed the slow,
// general way: the canonical JSON of the document, hashed.
func canonicalFingerprint(t *testing.T, toolID, quoteID string, canonicalInput []byte, approvalDigest string) string {
	doc, err := json.Marshal(struct {
		Tool     string          `json:"tool"`
		Quote    string          `json:"quoteId"`
		Input    json.RawMessage `json:"input"`
		Approval string          `json:"approval"`
	}{toolID, quoteID, canonicalInput, approvalDigest})
	require.NoError(t, err)
	canon, err := registry.Canonicalize(doc)
	require.NoError(t, err)
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:])
}

func TestFingerprintIsHashOfCanonicalDocument(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	inputs := []string{
		`{}`, `{"starttime":"2024-09-25"}`, `{"b":1,"a":[1,2.5,1e21,-0,1e-7,"x"]}`, `{"s":"<&>\u2028\u00e9\"\\\n"}`,
		`{"n":null,"t":true,"f":false,"o":{"z":{},"y":[]}}`, `{"\ud83d\ude00":"\ud800"}`, `{"big":123456789012345678901234567890}`,
		`[1,2,3]`, `"just a string"`, `12.50`,
	}
	approvals := []string{"", "sha256:" + "ab12", "not plain \"quoted\"", "back\\slash", "é", "<&>", "\x01", "tab\there"}
	for i := 0; i < 300; i++ {
		in, err := registry.Canonicalize([]byte(inputs[rng.IntN(len(inputs))]))
		require.NoError(t, err)
		tool, quote := uuid.NewString(), uuid.NewString()
		if i%7 == 0 {
			tool = "tool \"odd\" é"
		}
		approval := approvals[rng.IntN(len(approvals))]
		assert.Equal(t, canonicalFingerprint(t, tool, quote, in, approval), Of(tool, quote, in, approval), "%s %s %q", tool, in, approval)
	}
}
