package ruling

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestInputDefaultsFillWhatTheInputLeavesOut(t *testing.T) {
	ds := defaultsOf([]byte(`{"type": "object", "properties": {
		"limit": {"type": "integer", "default": 10},
		"orderby": {"type": "string", "default": "time"},
		"where": {"type": "object", "properties": {"country": {"type": "string", "default": "FR"}, "city": {"type": "string"}}},
		"q": {"type": "string"}
	}}`))
	in := map[string]any{"orderby": "magnitude", "where": map[string]any{"city": "Lyon"}}
	ds.fill(in)
	require.Equal(t, map[string]any{
		"limit":   10.0, // as JSON numbers are read, a double
		"orderby": "magnitude",
		"where":   map[string]any{"city": "Lyon", "country": "FR"},
	}, in, "a default fills only what is left out, nested objects included; q has none")

	require.Nil(t, defaultsOf([]byte(`{"type": "object", "properties": {"q": {"type": "string"}}}`)))
	var none defaults
	none.fill(in) // a schema without defaults changes nothing
	require.Len(t, in, 3)
}
