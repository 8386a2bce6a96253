package toolrun

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/toolgatetype"
)

// The call path writes a few things faster than the general code would;
// each must give exactly the same bytes, since they are stored, compared
// with earlier calls' and returned byte for byte on replay.

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
		got, err := Encode(e)
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got))
	}
	for i := 0; i < 100; i++ {
		n := strconv.Itoa(i)
		e := toolgatetype.Execution{ID: n, Status: toolgatetype.StatusCompleted, Output: json.RawMessage(`{"i":` + n + `}`)}
		want, _ := json.Marshal(e)
		got, err := Encode(e)
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got))
	}
}
