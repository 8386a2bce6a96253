package oauth

import (
	"crypto/sha256"
	"sync"
	"time"

	"github.com/toolgate/toolgate/apikey"
)

// maxCached is how many verified tokens are remembered at once.
const maxCached = 10_000

// verified remembers the tokens verified lately, by their SHA-256 digest,
// never the token itself, with what each grants, until it expires. A
// client sends the same token with every request for its life, so only
// its first request pays for the signature. The whole cache is dropped
// whenever the provider's keys are fetched again, so a token signed by a
// key the provider withdrew is not accepted from memory, and whenever the
// verifier's settings change (SetBudgetClaims).
type verified struct {
	mu      sync.RWMutex
	entries map[[sha256.Size]byte]verifiedToken
	// gen counts the resets, so that a token verified across one is not
	// remembered with what it was granted before it.
	gen uint64
}

type verifiedToken struct {
	grant apikey.TokenGrant
	until time.Time // exp plus the leeway
}

func newVerified() *verified {
	return &verified{entries: map[[sha256.Size]byte]verifiedToken{}}
}

// get returns the grant of a token verified before and not expired at now,
// and the generation to put a new grant in with.
func (c *verified) get(d [sha256.Size]byte, now time.Time) (apikey.TokenGrant, uint64, bool) {
	c.mu.RLock()
	e, ok := c.entries[d]
	gen := c.gen
	c.mu.RUnlock()
	if !ok || !now.Before(e.until) {
		return apikey.TokenGrant{}, gen, false
	}
	return e.grant, gen, true
}

// put remembers a verified token. When the cache is full, the expired
// entries go; if none had expired, all of them do, which costs the
// clients one verification each. A grant of an older generation than the
// cache's is not kept.
func (c *verified) put(d [sha256.Size]byte, grant apikey.TokenGrant, until, now time.Time, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return
	}
	if len(c.entries) >= maxCached {
		for k, e := range c.entries {
			if !now.Before(e.until) {
				delete(c.entries, k)
			}
		}
		if len(c.entries) >= maxCached {
			clear(c.entries)
		}
	}
	c.entries[d] = verifiedToken{grant: grant, until: until}
}

// reset forgets every token.
func (c *verified) reset() {
	c.mu.Lock()
	clear(c.entries)
	c.gen++
	c.mu.Unlock()
}
