package upstream

import (
	"net/url"
	"strings"
	"sync"
)

// origins remembers the operator's origins parsed. A call to a tool whose
// origin the operator set compares its request with that origin twice
// (its destination, then whether it may dial an internal address), and
// parsing the same few strings on every call cost two URLs' allocations.
type origins struct {
	mu     sync.RWMutex
	parsed map[string]*url.URL // nil: the origin does not parse
}

// maxOrigins bounds what origins keeps: a registry's origins are few, but
// they can be changed while the gateway runs, and each change leaves one
// string behind.
const maxOrigins = 1024

// same reports whether u is on origin: the same scheme and host, ignoring
// case. An origin that does not parse is no one's.
func (o *origins) same(u *url.URL, origin string) bool {
	p := o.parse(origin)
	return p != nil && strings.EqualFold(p.Scheme, u.Scheme) && strings.EqualFold(p.Host, u.Host)
}

func (o *origins) parse(origin string) *url.URL {
	o.mu.RLock()
	p, ok := o.parsed[origin]
	o.mu.RUnlock()
	if ok {
		return p
	}
	p, err := url.Parse(origin)
	if err != nil {
		p = nil
	}
	o.mu.Lock()
	if len(o.parsed) >= maxOrigins || o.parsed == nil {
		o.parsed = make(map[string]*url.URL)
	}
	o.parsed[origin] = p
	o.mu.Unlock()
	return p
}
