package toolgate

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/toolgatetype"
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
		assert.Equal(t, canonicalFingerprint(t, tool, quote, in, approval), fingerprint(tool, quote, in, approval), "%s %s %q", tool, in, approval)
	}
}

func TestEncodeExecutionMatchesMarshal(t *testing.T) {
	t.Parallel()
	out, err := json.Marshal(map[string]any{"s": "<&>\u2028 \"q\" é", "n": 1.5e300, "a": []any{nil, true, "x"}})
	require.NoError(t, err)
	for _, e := range []toolgatetype.Execution{
		{ID: uuid.NewString(), Tool: toolgatetype.ToolRef{ID: "t", Slug: "s", Name: `a ,"output":null,"error": name`}, Status: toolgatetype.StatusCompleted,
			Cost: toolgatetype.Cost{PriceUSD: "0.0000", FeeUSD: "0.0000", TotalUSD: "0.0000", Currency: "USD"}, Output: out},
		{ID: "x", Status: toolgatetype.StatusCompleted, Output: json.RawMessage(`null`)},
		{ID: "y", Status: toolgatetype.StatusFailed, Output: json.RawMessage(`null`), Error: &toolgatetype.ExecutionError{Code: "c", Message: "<m>"}},
	} {
		want, err := json.Marshal(e)
		require.NoError(t, err)
		got, err := encodeExecution(e)
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got))
	}
	for i := 0; i < 100; i++ {
		n := strconv.Itoa(i)
		e := toolgatetype.Execution{ID: n, Status: toolgatetype.StatusCompleted, Output: json.RawMessage(`{"i":` + n + `}`)}
		want, _ := json.Marshal(e)
		got, err := encodeExecution(e)
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got))
	}
}
