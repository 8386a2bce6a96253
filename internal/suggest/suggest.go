// Package suggest finds the name a mistyped word was meant as: a command
// of toolgate's, a field of its config.
package suggest

import "fmt"

// maxSuggestDistance is how many letters a word may be off from a name
// for the name to be suggested: a slip of one or two keys, not a
// different word. A short word gets one: "cmd" is two edits from "id".
const (
	maxSuggestDistance       = 2
	shortWordSuggestDistance = 1
	shortWord                = 5 // letters
)

// DidYouMean is `: did you mean "NAME"?` for the name of names nearest
// word, or "" when none is near enough to be what was meant.
func DidYouMean(word string, names []string) string {
	if name := Nearest(word, names); name != "" {
		return fmt.Sprintf(": did you mean %q?", name)
	}
	return ""
}

// Nearest is the name of names nearest word: one that starts with it
// ("serv" for serve), else the first at the fewest edits, when that is at
// most maxSuggestDistance (shortWordSuggestDistance for a short word) and
// fewer than word's own length (so that "x" does not suggest everything of
// two letters). "" when there is none.
func Nearest(word string, names []string) string {
	if word == "" {
		return ""
	}
	for _, name := range names {
		if len(word) >= 2 && len(name) > len(word) && name[:len(word)] == word {
			return name
		}
	}
	limit := maxSuggestDistance
	if len([]rune(word)) < shortWord {
		limit = shortWordSuggestDistance
	}
	best, bestDistance := "", limit+1
	for _, name := range names {
		if d := editDistance(word, name); d < bestDistance && d < len([]rune(word)) {
			best, bestDistance = name, d
		}
	}
	return best
}

// editDistance is the number of edits between a and b, by letters: the
// fewest insertions, deletions, substitutions and swaps of two neighbours
// that make one the other (the optimal string alignment distance). A swap
// counts one, as "hlep" is one slip from "help".
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}
