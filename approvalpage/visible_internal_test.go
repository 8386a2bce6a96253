package approvalpage

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/pagestyle"
)

// render shows every invisible character of a page as its escape, which
// may change only what came from outside: the pages' own text must have
// none, or the pass would show the person an escape of ours (and change
// the stylesheet its Content-Security-Policy allows by hash).
func TestPagesHaveNoInvisibleCharactersOfTheirOwn(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"templates/approval.html", "templates/spend.html", "templates/approval.css"} {
		b, err := approvalFS.ReadFile(name)
		require.NoError(t, err)
		assert.Equal(t, -1, strings.IndexFunc(string(b), pagestyle.Invisible), name)
	}
	assert.Equal(t, approvalStyle, pagestyle.Visible(approvalStyle), "the stylesheet")
}
