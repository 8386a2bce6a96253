package server

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestParseConfigMaxOpenQuotes reads the cap on a caller's open quotes,
// and refuses one that would leave a caller none or is not a count.
func TestParseConfigMaxOpenQuotes(t *testing.T) {
	t.Parallel()
	cfg, err := ParseConfig([]byte(`{"maxOpenQuotes": 3}`))
	require.NoError(t, err)
	assert.Equal(t, 3, cfg.MaxOpenQuotes)

	cfg, err = ParseConfig([]byte(`{}`))
	require.NoError(t, err)
	assert.Zero(t, cfg.MaxOpenQuotes, "zero means the gateway's 1,000")

	for doc, want := range map[string]string{
		`{"maxOpenQuotes": 0}`:     `config: maxOpenQuotes: must be at least 1: every caller may hold some open quotes`,
		`{"maxOpenQuotes": -1}`:    `config: maxOpenQuotes: -1 is not a whole number from 0 to 2147483647`,
		`{"maxOpenQuotes": 2.5}`:   `config: maxOpenQuotes: 2.5 is not a whole number from 0 to 2147483647`,
		`{"maxOpenQuotes": "100"}`: `config: maxOpenQuotes: must be a whole number, not a string`,
	} {
		_, err := ParseConfig([]byte(doc))
		require.Error(t, err, doc)
		assert.Equal(t, want, err.Error(), doc)
	}
}
