package registry_test

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/registry"
)

// TestListMatchesBruteForce holds List, which keeps its order incrementally
// and searches one text of all tools, to the plain definition: filter every
// current version by q, sort by the listing order, then page.
func TestListMatchesBruteForce(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 8))
	words := []string{"Weather", "stock", "MAPS", "géo", "İstanbul", "tool", "a", "ab", "b\x00c", "x y", "Z"}
	word := func() string { return words[rng.IntN(len(words))] + strconv.Itoa(rng.IntN(3)) }
	base := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	r := registry.New()
	versions := map[string]int{}
	for step := 0; step < 400; step++ {
		slug := "t" + strconv.Itoa(rng.IntN(60))
		switch rng.IntN(4) {
		case 0, 1: // a new tool or a new version of one
			tool := newTool(slug)
			tool.Name, tool.Description, tool.Category = word()+" "+word(), word()+word(), word()
			tool.Endpoint.Verified = rng.IntN(3) == 0
			tool.UpdatedAt = base.Add(time.Duration(rng.IntN(5)) * time.Hour)
			tool.Version = versions[slug] + 1
			require.NoError(t, r.Register(tool))
			versions[slug]++
		case 2:
			if versions[slug] > 0 {
				require.NoError(t, r.SetTrust(slug, registry.Trust{EndpointVerified: registry.Bool(rng.IntN(2) == 0)}))
			}
		}
		all, total := r.List("", 1000, 0)
		require.Len(t, all, total)
		require.True(t, slices.IsSortedFunc(all, func(a, b *registry.Version) int {
			switch {
			case a.Tool.Endpoint.Verified != b.Tool.Endpoint.Verified:
				if a.Tool.Endpoint.Verified {
					return -1
				}
				return 1
			case !a.Tool.UpdatedAt.Equal(b.Tool.UpdatedAt):
				return b.Tool.UpdatedAt.Compare(a.Tool.UpdatedAt)
			}
			return strings.Compare(a.Tool.Slug, b.Tool.Slug)
		}), "step %d: listing order", step)
		for _, q := range []string{word(), strings.ToUpper(word()), "a", " ab ", "\x00", "b\x00c1", "1 " + word(), "zzz"} {
			lq := strings.ToLower(strings.TrimSpace(q))
			var want []*registry.Version
			for _, v := range all {
				tl := v.Tool
				if strings.Contains(strings.ToLower(tl.Name), lq) || strings.Contains(strings.ToLower(tl.Description), lq) ||
					strings.Contains(strings.ToLower(tl.Category), lq) {
					want = append(want, v)
				}
			}
			offset, limit := rng.IntN(4), 1+rng.IntN(6)
			got, total := r.List(q, limit, offset)
			assert.Equal(t, len(want), total, "step %d q %q", step, q)
			page := want[min(offset, len(want)):min(offset+limit, len(want))]
			assert.Equal(t, len(page), len(got), "step %d q %q", step, q)
			for i := range min(len(page), len(got)) {
				assert.Same(t, page[i], got[i], "step %d q %q", step, q)
			}
		}
	}
}
