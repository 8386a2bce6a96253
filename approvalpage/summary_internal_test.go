package approvalpage

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/pagestyle"
)

func TestInputSummaryShowsEveryFieldShortestFirst(t *testing.T) {
	t.Parallel()
	content := strings.Repeat("A", 5000)
	for _, c := range []struct {
		name, input string
		want        string // the whole line, or its start when prefix is set
		prefix      bool
	}{
		{"shortest value first", `{"step":1,"goal":"reach the summit"}`, `2 fields: step: 1, goal: "reach the summit"`, false},
		{"one field", `{"q":"x"}`, `1 field: q: "x"`, false},
		{"no fields", `{}`, `no fields`, false},
		{"an array", `[1,2]`, `2 items: [1,2]`, false},
		{"a string", `"hello"`, `"hello"`, false},
		{"null", `null`, `null`, false},
		{"equal widths by name", `{"b":"yy","a":"xx"}`, `2 fields: a: "xx", b: "yy"`, false},
		{"a long content does not hide the path", `{"content":"` + content + `","path":"/etc/passwd"}`,
			`2 fields: path: "/etc/passwd", content: "AAAA`, true},
		{"a long name does not hide the path", `{"` + strings.Repeat("n", 300) + `":1,"path":"/etc/passwd"}`,
			`2 fields: ` + strings.Repeat("n", 23) + `…: 1, path: "/etc/passwd"`, false},
		{"a bidi override is shown as its escape", `{"to":"moc.live@` + "\u202e" + `kcatta"}`,
			`1 field: to: "moc.live@\u202Ekcatta"`, false},
		{"nested values stay compact", `{"opts":{"a":[1, 2]},"id":7}`, `2 fields: id: 7, opts: {"a":[1,2]}`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := inputSummary(json.RawMessage(c.input)).String()
			if c.prefix {
				assert.True(t, strings.HasPrefix(got, c.want), "%s", got)
			} else {
				assert.Equal(t, c.want, got)
			}
			assert.LessOrEqual(t, len([]rune(got)), summaryBudget, "%s", got)
			assert.Equal(t, -1, strings.IndexFunc(got, pagestyle.Invisible), "%q", got)
		})
	}
}

// The long values share the line evenly; the short ones are whole.
func TestInputSummarySharesTheLineFairly(t *testing.T) {
	t.Parallel()
	in := fmt.Sprintf(`{"a":"%s","b":"%s","c":"%s","to":"bob"}`, strings.Repeat("a", 300), strings.Repeat("b", 300), strings.Repeat("c", 40))
	s := inputSummary(json.RawMessage(in))
	require.Equal(t, "4 fields", s.Count)
	require.Len(t, s.Fields, 4)
	assert.Equal(t, summaryField{"to", `"bob"`}, s.Fields[0])
	var names []string
	widths := map[string]int{}
	for _, f := range s.Fields {
		names = append(names, f.Name)
		widths[f.Name] = len([]rune(f.Value))
	}
	assert.Equal(t, []string{"to", "c", "a", "b"}, names, "shortest value first")
	assert.LessOrEqual(t, widths["a"]-widths["b"], 1, "long values share evenly: %v", widths)
	assert.GreaterOrEqual(t, widths["a"]-widths["b"], 0)
	assert.True(t, strings.HasSuffix(s.Fields[2].Value, "…"))
	assert.Equal(t, summaryBudget, len([]rune(s.String())), "the line uses its whole budget: %s", s)
	if widths["c"] < 42 {
		assert.Equal(t, widths["a"], widths["c"], "a value cut gets the same share as the longer ones: %v", widths)
	}
}

// An input of more fields than the line can hold still shows every one.
func TestInputSummaryOfManyFieldsShowsThemAll(t *testing.T) {
	t.Parallel()
	members := map[string]string{}
	for i := range 40 {
		members[fmt.Sprintf("field%02d", i)] = strings.Repeat("v", 50)
	}
	raw, err := json.Marshal(members)
	require.NoError(t, err)
	s := inputSummary(raw)
	assert.Equal(t, "40 fields", s.Count)
	require.Len(t, s.Fields, 40)
	for _, f := range s.Fields {
		assert.Equal(t, minSummaryValue, len([]rune(f.Value)), "%s: %s", f.Name, f.Value)
	}
}

// Escapes are never cut in two, in a value made of nothing else.
func TestInputSummaryKeepsEscapesWhole(t *testing.T) {
	t.Parallel()
	s := inputSummary(json.RawMessage(`{"v":"` + strings.Repeat("\u200b", 100) + `","w":1}`)).String()
	rest := regexp.MustCompile(`\\u200B`).ReplaceAllString(s, "")
	assert.NotContains(t, rest, `\`, "%s", s)
	assert.LessOrEqual(t, len([]rune(s)), summaryBudget)
}

func TestFairShares(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		widths []int
		budget int
		want   []int
	}{
		{[]int{3, 5}, 100, []int{3, 5}},
		{[]int{13, 5002}, 100, []int{13, 87}},
		{[]int{10, 300, 300}, 100, []int{10, 45, 45}},
		{[]int{10, 299, 300}, 101, []int{10, 46, 45}},
		{[]int{40, 40, 40}, 90, []int{30, 30, 30}},
		{[]int{1, 2, 3}, 6, []int{1, 2, 3}},
	} {
		assert.Equal(t, c.want, fairShares(c.widths, c.budget), "%v in %d", c.widths, c.budget)
	}
}

func TestPrettyInputIsolatesValuesAndHidesNothing(t *testing.T) {
	t.Parallel()
	parts := prettyInput(json.RawMessage(`{"path":"/etc/passwd","to":"moc.live@` + "\u202e" + `kcatta","n":[1,"x\"y"]}`))
	var text strings.Builder
	var values []string
	for _, p := range parts {
		text.WriteString(p.Text)
		if p.String {
			values = append(values, p.Text)
		}
	}
	assert.Equal(t, "{\n  \"path\": \"/etc/passwd\",\n  \"to\": \"moc.live@\\u202Ekcatta\",\n  \"n\": [\n    1,\n    \"x\\\"y\"\n  ]\n}", text.String())
	assert.Equal(t, []string{`"/etc/passwd"`, `"moc.live@\u202Ekcatta"`, `"x\"y"`}, values)
}
