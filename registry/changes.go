package registry

import (
	"fmt"
	"slices"
	"sort"
	"sync"
)

// watchers are the functions told of a registry's changes.
type watchers struct {
	mu   sync.Mutex
	next int
	fns  map[int]func()
}

// notifyIf calls every watcher when *changed is true. It runs after the
// registry's lock is released, so a watcher may read the registry.
func (w *watchers) notifyIf(changed *bool) {
	if !*changed {
		return
	}
	w.mu.Lock()
	fns := make([]func(), 0, len(w.fns))
	for _, fn := range w.fns {
		fns = append(fns, fn)
	}
	w.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
}

// OnChange calls fn after each change to the registry: a tool registered,
// removed, or given a new version, trust or origin. fn runs on the
// goroutine that made the change, after the change is visible to Lookup
// and List, so it must return quickly and must not change the registry
// itself; it says only that something changed, not what. stop ends the
// calls.
func (r *Registry) OnChange(fn func()) (stop func()) {
	w := &r.watchers
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fns == nil {
		w.fns = map[int]func(){}
	}
	id := w.next
	w.next++
	w.fns[id] = fn
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		delete(w.fns, id)
	}
}

// Remove takes a tool out of the registry: it is no longer listed, and
// Lookup no longer finds it by slug or id, so quotes and calls of it are
// refused as of a tool that does not exist. Its versions go with it. Should
// it come back, register it with a version higher than any it had: a quote
// names its tool's version and digest, and one issued before it left must
// not become usable again. The operator's origin and retry-safety
// overrides of its slug stay.
func (r *Registry) Remove(slugOrID string) error {
	changed := false
	defer r.watchers.notifyIf(&changed)
	r.mu.Lock()
	defer r.mu.Unlock()
	slug, err := r.resolve(slugOrID)
	if err != nil {
		return err
	}
	cur := r.current[slug]
	i := sort.Search(len(r.ordering), func(i int) bool { return !listsBefore(r.ordering[i].Tool, cur.Tool) })
	if i >= len(r.ordering) || r.ordering[i] != cur {
		if i = slices.Index(r.ordering, cur); i < 0 {
			return fmt.Errorf("registry: %s is missing from the listing", slug) // unreachable while the order is total
		}
	}
	r.ordering = slices.Delete(r.ordering, i, i+1)
	r.changes++
	delete(r.current, slug)
	delete(r.byID, cur.Tool.ID)
	delete(r.history, slug)
	changed = true
	return nil
}
