package tooldocs_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/pagestyle"
)

// The page shows a provider's invisible characters as escapes, as the
// approval pages do: a right-to-left override in a name, a description, a
// tag or a schema is read, never obeyed.
func TestToolPageShowsInvisibleCharactersAsEscapes(t *testing.T) {
	t.Parallel()
	tool := plainTool("bidi-tool")
	tool.Name = "Mail " + "\u202e" + "rednes"
	tool.Description = "Sends mail to moc.live@\u202ekcatta\u200b only"
	tool.Category = "mail\u2066"
	tool.Tags = []string{"safe\u200d", "ok"}
	tool.Provider.Name = "Trusted\u202e Co"
	tool.InputSchema = json.RawMessage(`{"type":"object","properties":{"to":{"type":"string","description":"always ` + "\u202e" + `evil"}}}`)
	srv := newDocsServer(t, tool)
	r := srv.get(t, "/tools/bidi-tool")
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	page := string(r.body)

	assert.Equal(t, -1, strings.IndexFunc(page, pagestyle.Invisible), "no invisible character reaches the page raw")
	for _, want := range []string{
		`<h1>Mail \u202Erednes</h1>`,
		`Sends mail to moc.live@\u202Ekcatta\u200B only`,
		`<bdi>mail\u2066</bdi>`,
		`<span class="tag">safe\u200D</span>`,
		`Trusted\u202E Co`,
		`always \u202Eevil`,
	} {
		assert.Contains(t, page, want)
	}
}
