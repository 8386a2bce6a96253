package weburl

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Each rule on its own: the error under the zero Allow, and the one field
// that lifts it.
func TestCheckEachRule(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		url    string
		strict error // under Allow{}
		lift   Allow // allows it; zero when nothing does
	}{
		{url: "https://h.example"},
		{url: "https://h.example/"},
		{url: "http://h.example:8080"},
		{url: "HTTPS://H.example"},
		{url: "http://127.0.0.1:9001"},
		{url: "http://[::1]:9001/"},

		{url: "https://h.example/%zz", strict: ErrSyntax},
		{url: "https://h.example:port", strict: ErrSyntax},
		{url: " https://h.example", strict: ErrSyntax},
		{url: "ftp://h.example", strict: ErrScheme, lift: Allow{AnyScheme: true}},
		{url: "javascript:alert(1)", strict: ErrScheme},
		{url: "h.example", strict: ErrScheme},
		{url: "127.0.0.1:9001", strict: ErrSyntax},
		{url: "https://", strict: ErrHost},
		{url: "https:///path", strict: ErrHost},
		{url: "http://:8080", strict: ErrHost, lift: Allow{PortOnlyHost: true}},
		{url: "https://me:secret@h.example", strict: ErrUser, lift: Allow{User: true}},
		{url: "https://@h.example", strict: ErrUser, lift: Allow{User: true}},
		{url: "https://h.example/mcp", strict: ErrPath, lift: Allow{Path: true}},
		{url: "https://h.example//", strict: ErrPath, lift: Allow{Path: true}},
		{url: "https://h.example?to=elsewhere", strict: ErrQuery, lift: Allow{Query: true}},
		{url: "https://h.example/?to=elsewhere", strict: ErrQuery, lift: Allow{Query: true}},
		{url: "https://h.example?", strict: ErrQuery, lift: Allow{EmptyQuery: true}},
		{url: "https://h.example#top", strict: ErrFragment, lift: Allow{Fragment: true}},
		{url: "https://h.example#", strict: ErrFragment, lift: Allow{EmptyFragment: true}},
		{url: "https://h.example#?", strict: ErrFragment, lift: Allow{Fragment: true}},
	} {
		t.Run(tc.url, func(t *testing.T) {
			t.Parallel()
			u, err := Check(tc.url, Allow{})
			require.ErrorIs(t, err, tc.strict)
			if tc.strict == nil {
				assert.NotNil(t, u)
				return
			}
			assert.Nil(t, u)
			if tc.lift == (Allow{}) {
				return
			}
			u, err = Check(tc.url, tc.lift)
			require.NoError(t, err)
			assert.NotNil(t, u)
		})
	}
}

// Where a URL breaks several rules, the first in Check's order is named,
// and allowing one rule leaves the others in force.
func TestCheckOrderAndIndependence(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		url   string
		allow Allow
		want  error
	}{
		{"ftp://me@h.example/p?q#f", Allow{}, ErrScheme},
		{"ftp://me@h.example/p?q#f", Allow{AnyScheme: true}, ErrUser},
		{"https://me@h.example/p?q#f", Allow{User: true}, ErrPath},
		{"https://h.example/p?q#f", Allow{Path: true}, ErrQuery},
		{"https://h.example/p?q#f", Allow{Path: true, Query: true}, ErrFragment},
		{"https://h.example/p?#f", Allow{Path: true, EmptyQuery: true}, ErrFragment},
		{"https://h.example?q", Allow{EmptyQuery: true}, ErrQuery},
		{"https://h.example#f", Allow{EmptyFragment: true}, ErrFragment},
		{"https://h.example?#", Allow{EmptyQuery: true}, ErrFragment},
		{"https://h.example?#", Allow{EmptyFragment: true}, ErrQuery},
		{"https://h.example?#", Allow{EmptyQuery: true, EmptyFragment: true}, nil},
		{"http://:8080/p", Allow{Path: true}, ErrHost},
	} {
		_, err := Check(tc.url, tc.allow)
		assert.ErrorIs(t, err, tc.want, "%s under %+v", tc.url, tc.allow)
		if tc.want == nil {
			assert.NoError(t, err, "%s under %+v", tc.url, tc.allow)
		}
	}
}

// The rules each place that checks a URL gives, side by side: the same
// Allow values as at their calls, so that where they differ shows here.
func TestCheckAsEachCallerDoes(t *testing.T) {
	t.Parallel()
	callers := []struct {
		name  string
		allow Allow
	}{
		{"registry origin", Allow{}},
		{"config upstreams origin", Allow{PortOnlyHost: true, EmptyFragment: true}},
		{"upstream origin transport", Allow{PortOnlyHost: true, EmptyQuery: true, EmptyFragment: true}},
		{"mcpserver PublicURL", Allow{PortOnlyHost: true, Path: true, EmptyFragment: true}},
		{"config approvals publicUrl", Allow{PortOnlyHost: true, Path: true}},
		{"oauth issuer and audience", Allow{AnyScheme: true, PortOnlyHost: true, Path: true, EmptyFragment: true}},
		{"MCP server url", Allow{PortOnlyHost: true, Path: true, Query: true, EmptyFragment: true}},
		{"config approvals webhookUrl", Allow{PortOnlyHost: true, Path: true, Query: true, Fragment: true}},
		{"webhook sender", Allow{PortOnlyHost: true, User: true, Path: true, Query: true, Fragment: true}},
		{"client base URL", Allow{PortOnlyHost: true, Path: true, EmptyQuery: true, EmptyFragment: true}},
	}
	// Each row: whether each caller above, in order, accepts the URL.
	for _, tc := range []struct {
		url    string
		accept string // one mark per caller: + accepted, - refused
	}{
		{"https://h.example", "++++++++++"},
		{"https://h.example/", "++++++++++"},
		{"ftp://h.example", "-----+----"},
		{"http://:8080", "-+++++++++"},
		{"https://h.example#", "-+++-+++++"},
		{"https://h.example?", "--+---++++"},
		{"https://h.example/mcp", "---+++++++"},
		{"https://h.example/mcp?x=1", "------+++-"},
		{"https://h.example/mcp#x", "-------++-"},
		{"https://me@h.example", "--------+-"},
	} {
		require.Len(t, tc.accept, len(callers), tc.url)
		for i, c := range callers {
			_, err := Check(tc.url, c.allow)
			assert.Equal(t, tc.accept[i] == '+', err == nil, fmt.Sprintf("%s by %s: %v", tc.url, c.name, err))
		}
	}
}

func TestHostPort(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		h    string
		want bool
	}{
		{"mcp.example.com", true},
		{"MCP.example.com", true},
		{"10.0.0.5:8080", true},
		{"localhost:1", true},
		{"[::1]", true},
		{"[::1]:80", true},
		{"h.example:", true}, // an empty port, as url.Parse allows

		{"", false},
		{":8080", false},
		{"https://h.example", false},
		{"h.example/mcp", false},
		{"h.example?x", false},
		{"h.example#x", false},
		{"me@h.example", false},
		{"h example", false},
		{"h.example:port", false},
		{"::1", true}, // url.Parse reads "::" and a port 1: accepted as before
		{"[::1", false},
		{"%zz", false},
	} {
		assert.Equal(t, tc.want, HostPort(tc.h), "%q", tc.h)
	}
}
