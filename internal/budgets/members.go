package budgets

import "slices"

// For returns the budgets a caller counts in: those naming the principal
// among Members or whose Claims all match claims, and all their ancestors,
// each once, nearest the principal first; then the budgets of everyone
// not among them, and their ancestors, as the farthest: an
// organization's ceiling comes after its teams. Budgets at the same
// distance come in configuration order: a principal in two teams under
// one organization gets both teams, then the organization once.
func (t *Tree) For(principal string, claims map[string][]string) []*Node {
	// Clipped, so that appending a claimed budget copies rather than
	// writes into the Tree's slice.
	level := slices.Clip(t.byMember[principal])
	if len(claims) > 0 {
		for _, n := range t.claimed {
			if n.claimsMatch(claims) && !slices.Contains(level, n) {
				level = append(level, n)
			}
		}
	}
	if len(level) == 0 && len(t.everyone) == 0 {
		return nil
	}
	out := withAncestors(make([]*Node, 0, len(level)+len(t.everyone)+2), level)
	var everyone []*Node
	for _, n := range t.everyone {
		if !slices.Contains(out, n) {
			everyone = append(everyone, n)
		}
	}
	return withAncestors(out, everyone)
}

// withAncestors appends level and then, level by level, their ancestors
// to out, each node once.
func withAncestors(out, level []*Node) []*Node {
	for len(level) > 0 {
		start := len(out)
		for _, n := range sortedByIndex(level) {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
		// The next level is the parents of those just added; a parent
		// already listed is nearer by another path and stays where it is.
		level = nil
		for _, n := range out[start:] {
			if p := n.Parent; p != nil && !slices.Contains(out, p) && !slices.Contains(level, p) {
				level = append(level, p)
			}
		}
	}
	return out
}

// claimsMatch reports whether every one of the budget's claims is among
// the token's: a string claim equal to the value, or an array claim
// holding it, compared exactly.
func (n *Node) claimsMatch(claims map[string][]string) bool {
	for name, want := range n.Claims {
		found := false
		for _, v := range claims[name] {
			if v == want {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// sortedByIndex returns nodes in configuration order, copying them first
// when they are out of order, since they may be the Tree's own slice.
func sortedByIndex(nodes []*Node) []*Node {
	byIndex := func(a, b *Node) int { return a.index - b.index }
	if slices.IsSortedFunc(nodes, byIndex) {
		return nodes
	}
	return slices.SortedFunc(slices.Values(nodes), byIndex)
}
