package jsonbuf_test

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/jsonbuf"
)

type marshaler struct{}

func (marshaler) MarshalJSON() ([]byte, error) { return []byte(` { "b" : [ 1 , 2 ] } `), nil }

// The same bytes as json.Marshal, whatever was encoded before in the same
// buffer, and the same refusals.
func TestMarshalAsJSONMarshal(t *testing.T) {
	values := []any{
		nil, 0, "<a & b>\u2028", map[string]any{"z": 1, "a": []any{true, nil, 1.5e-7}},
		struct {
			A string          `json:"a,omitempty"`
			B json.RawMessage `json:"b"`
			C marshaler       `json:"c"`
		}{B: json.RawMessage(` [1, 2] `)},
		[]byte("bytes"), "a longer string than the last one, so the buffer grows", 1,
	}
	b := jsonbuf.Get()
	defer b.Release()
	for _, v := range values {
		want, err := json.Marshal(v)
		require.NoError(t, err)
		got, err := b.Marshal(v)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got), "%#v", v)
	}
	_, wantErr := json.Marshal(math.Inf(1))
	_, err := b.Marshal(math.Inf(1))
	require.Error(t, wantErr)
	require.EqualError(t, err, wantErr.Error())
}
