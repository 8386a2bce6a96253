package tooldocs

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/pagestyle"
)

// The page shows every invisible character as its escape, which may change
// only provider text: the template must have none of its own.
func TestToolPageTemplateHasNoInvisibleCharacters(t *testing.T) {
	t.Parallel()
	b, err := templateFS.ReadFile("templates/tool.html")
	require.NoError(t, err)
	assert.Equal(t, -1, strings.IndexFunc(string(b), pagestyle.Invisible))
	assert.Equal(t, -1, strings.IndexFunc(pagestyle.CSS, pagestyle.Invisible))
}
