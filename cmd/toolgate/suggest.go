package main

import "fmt"

// maxSuggestDistance is how many letters a word may be off from a name
// for the name to be suggested: a slip of one or two keys, not a
// different word.
const maxSuggestDistance = 2

// didYouMean is `: did you mean "NAME"?` for the name of names nearest
// word, or "" when none is near enough to be what was meant.
func didYouMean(word string, names []string) string {
	if name := nearest(word, names); name != "" {
		return fmt.Sprintf(": did you mean %q?", name)
	}
	return ""
}

// nearest is the name of names nearest word: one that starts with it
// ("serv" for serve), else the first at the fewest edits, when that is at
// most maxSuggestDistance and fewer than word's own length (so that "x"
// does not suggest everything of two letters). "" when there is none.
func nearest(word string, names []string) string {
	if word == "" {
		return ""
	}
	for _, name := range names {
		if len(word) >= 2 && len(name) > len(word) && name[:len(word)] == word {
			return name
		}
	}
	best, bestDistance := "", maxSuggestDistance+1
	for _, name := range names {
		if d := editDistance(word, name); d < bestDistance && d < len([]rune(word)) {
			best, bestDistance = name, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, by letters:
// the fewest insertions, deletions and substitutions that make one the
// other.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
