package approvalpage

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/toolgate/toolgate/internal/pagestyle"
)

// The one-line summary of the input beside the buttons is what most
// people read before they decide, so nothing in the input may hide
// anything else there: a 5,000-character content must not push the path a
// file write overwrites out of it. The rule:
//
//   - every top-level field of an object is shown, name and value, and the
//     line says how many there are ("3 fields");
//   - shortest value first (then by name), so the short ones, which are
//     often the ones that say where (a path, an address, an account), lead;
//   - the line has summaryBudget characters, the count and separators
//     included. Names are cut at maxSummaryName. The values share what is
//     left fairly: a value shorter than its share is shown whole and gives
//     back what it did not use, and the long ones split the rest evenly,
//     each cut to its share with an ellipsis. Every value gets at least
//     minSummaryValue characters, so an input of very many fields makes
//     the line longer than the budget rather than leaving one out;
//   - an invisible character counts as the escape it is shown as
//     (pagestyle.Visible), and is never cut in two.
//
// An input that is not an object is shown as its JSON, cut to the budget:
// an array says how many items it holds ("2 items").
//
// summaryBudget is 120 characters: three lines of the page's monospace
// type on a 390-pixel phone, under two on a desktop, which keeps Approve
// and Deny on the first screen. The whole input is in the details below.
const (
	summaryBudget   = 120
	maxSummaryName  = 24
	minSummaryValue = 8
)

// inputSummaryView is the summary as the page shows it: the count, then
// the fields in order (each isolated on the page, so that one cannot
// reorder another), or, for an input that is not an object, its text.
type inputSummaryView struct {
	Count  string
	Fields []summaryField
	Text   string
}

// summaryField is one field of the summary, both parts already visible
// (pagestyle.Visible) and cut to their share.
type summaryField struct {
	Name, Value string
}

// String is the summary as one line of text, as a person reads it.
func (s inputSummaryView) String() string {
	var b strings.Builder
	b.WriteString(s.Count)
	if s.Count != "" && (len(s.Fields) > 0 || s.Text != "") {
		b.WriteString(": ")
	}
	for i, f := range s.Fields {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(f.Name + ": " + f.Value)
	}
	b.WriteString(s.Text)
	return b.String()
}

// inputSummary summarizes an input by the rule above.
func inputSummary(raw json.RawMessage) inputSummaryView {
	var members map[string]json.RawMessage
	if json.Unmarshal(raw, &members) != nil || members == nil {
		return otherSummary(raw)
	}
	v := inputSummaryView{Count: plural(len(members), "field")}
	if len(members) == 0 {
		return v
	}
	type field struct {
		name, value string // as given, not yet visible
		width       int    // of the value, shown whole
	}
	fields := make([]field, 0, len(members))
	used := pagestyle.Width(v.Count) + len(": ")
	for name, value := range members {
		text := compactJSON(value)
		fields = append(fields, field{name: name, value: text, width: pagestyle.Width(text)})
		used += min(pagestyle.Width(name), maxSummaryName) + len(": ")
	}
	used += len(", ") * (len(fields) - 1)
	slices.SortFunc(fields, func(a, b field) int {
		if a.width != b.width {
			return a.width - b.width
		}
		return strings.Compare(a.name, b.name)
	})
	widths := make([]int, len(fields))
	for i, f := range fields {
		widths[i] = f.width
	}
	share := fairShares(widths, max(summaryBudget-used, minSummaryValue*len(fields)))
	for i, f := range fields {
		v.Fields = append(v.Fields, summaryField{Name: pagestyle.Cut(f.name, maxSummaryName), Value: pagestyle.Cut(f.value, share[i])})
	}
	return v
}

// otherSummary summarizes an input that is not an object.
func otherSummary(raw json.RawMessage) inputSummaryView {
	var v inputSummaryView
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) == nil && items != nil {
		v.Count = plural(len(items), "item")
	}
	budget := summaryBudget
	if v.Count != "" {
		budget -= pagestyle.Width(v.Count) + len(": ")
	}
	v.Text = pagestyle.Cut(compactJSON(raw), budget)
	return v
}

// fairShares splits budget among values of the given widths, sorted
// shortest first: each value in turn is offered an even split of what is
// left; one that fits is shown whole, and once one does not, it and every
// longer one get the even split of the rest (the shorter of them the odd
// characters). The shares add up to at most budget.
func fairShares(widths []int, budget int) []int {
	shares := make([]int, len(widths))
	left := budget
	for i, w := range widths {
		n := len(widths) - i
		if w <= left/n {
			shares[i] = w
			left -= w
			continue
		}
		for j := i; j < len(widths); j++ {
			shares[j] = left / n
			if j-i < left%n {
				shares[j]++
			}
		}
		break
	}
	return shares
}

// compactJSON is raw with no insignificant white space, as it is stored;
// raw that is not JSON is returned as it is.
func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// plural counts things: "no fields", "1 field", "3 fields".
func plural(n int, thing string) string {
	switch n {
	case 0:
		return "no " + thing + "s"
	case 1:
		return "1 " + thing
	}
	return strconv.Itoa(n) + " " + thing + "s"
}

// inputPart is a piece of the full input as the page shows it: a string
// value, which the page isolates so that it cannot reorder the text
// around it, or anything else (names, punctuation, numbers, white space).
// A name is left in the line: it begins its line, each line of the view
// is a paragraph of its own, and the value after it is isolated, so there
// is nothing a name could move but its own quotes.
type inputPart struct {
	Text   string
	String bool
}

// prettyInput indents the canonical input for reading and cuts it into
// its strings and what lies between them, every invisible character shown
// as its escape (the canonical form, RFC 8785, writes a right-to-left
// override as itself); html/template escapes the rest wherever it lands.
func prettyInput(raw json.RawMessage) []inputPart {
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return []inputPart{{Text: pagestyle.Visible(string(raw)), String: true}}
	}
	var parts []inputPart
	s := b.String()
	for s != "" {
		start := strings.IndexByte(s, '"')
		if start < 0 {
			parts = append(parts, inputPart{Text: s})
			break
		}
		if start > 0 {
			parts = append(parts, inputPart{Text: s[:start]})
		}
		end := stringEnd(s, start)
		name := strings.HasPrefix(s[end:], ":")
		parts = append(parts, inputPart{Text: pagestyle.Visible(s[start:end]), String: !name})
		s = s[end:]
	}
	return parts
}

// stringEnd returns where the JSON string that opens at s[start] ends,
// just past its closing quote (or the end of s, for a string not closed).
func stringEnd(s string, start int) int {
	for i := start + 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(s)
}
