package suggest

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestNearest(t *testing.T) {
	t.Parallel()
	names := []string{"serve", "mcp", "tools", "help", "version"}
	for word, want := range map[string]string{
		"serv": "serve", "srve": "serve", "mpc": "mcp", "hlep": "help", "v": "", "x": "", "receipts": "", "": "",
	} {
		assert.Equal(t, want, Nearest(word, names), word)
	}
}
