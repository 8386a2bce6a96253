package server

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestMistypedConfigFieldSuggestsTheNearest: an unknown field near a field
// of its object, at the top or nested, gets that field suggested.
func TestMistypedConfigFieldSuggestsTheNearest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		doc  string
		want string
	}{
		{`{"listn": "127.0.0.1:8080"}`, `config: unknown field "listn": did you mean "listen"?`},
		{`{"builtinTool": false}`, `config: unknown field "builtinTool": did you mean "builtinTools"?`},
		{`{"principals": [{"id": "a", "apiKey": ["tg_test_a_0123456789"]}]}`, `config: principals[0]: unknown field "apiKey": did you mean "apiKeys"?`},
		{`{"mcpServers": [{"id": "a", "comand": ["srv"]}]}`, `config: mcpServers[0]: unknown field "comand": did you mean "command"?`},
		{`{"budgets": [{"id": "team", "dailyLimtUsd": "1.0000"}]}`, `config: budgets[0]: unknown field "dailyLimtUsd": did you mean "dailyLimitUsd"?`},
		{`{"colour": "blue"}`, `config: unknown field "colour"`},
	}
	for _, tt := range tests {
		_, err := ParseConfig([]byte(tt.doc))
		if assert.Error(t, err, tt.doc) {
			assert.Equal(t, tt.want, err.Error(), tt.doc)
		}
	}
}
