// Package registry holds the tools a gateway can quote and call: their
// definitions, compiled schemas, manifest digests and the operator's trust
// and origin overrides.
//
// Built-in tools register themselves into Default from init(), in the manner
// of database/sql drivers. A gateway can instead be given its own New()
// registry, which is what tests should do so they never share global state.
//
// Operators add HTTP tools without Go code by writing toolgate.tool/v1
// manifests (ManifestFormatSchema): ParseManifest turns one into a Tool whose
// request building and answer reading follow the manifest, holding its
// provider credential where nothing shows it, and Registry.LoadManifests
// registers every manifest matching a pattern in an fs.FS.
package registry

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/toolgate/toolgate/internal/probe"
	"github.com/toolgate/toolgate/internal/weburl"
	"github.com/toolgate/toolgate/toolgatetype"
)

// Errors returned by Registry methods.
var (
	// ErrNotFound: no tool with that slug or id.
	ErrNotFound = errors.New("registry: tool not found")
	// ErrDuplicate: a tool with that slug and version is already registered.
	ErrDuplicate = errors.New("registry: tool version already registered")
	// ErrInvalidTool: the definition is incomplete or inconsistent.
	ErrInvalidTool = errors.New("registry: invalid tool definition")
)

// Version is one registered tool version as the gateway sees it at a point
// in time: the definition with the operator's overrides applied, the
// normalized capabilities, compiled schemas and manifest digest. A Version is
// immutable; an override publishes a new *Version in its place, so readers
// never lock.
type Version struct {
	Tool         *Tool
	Origin       string // the origin in force: the operator's, else the tool's own
	Capabilities toolgatetype.NormalizedCapabilities
	// Digest is the manifest digest, or "" when the tool has no immutable version.
	Digest string
	Input  *Schema
	Output *Schema // nil when the tool declares no output schema
	// OperatorOrigin is true when the operator configured Origin for this tool.
	OperatorOrigin bool
	// operatorRetrySafe is the operator's word on whether the tool's
	// requests may be sent again; nil leaves it to the capabilities.
	operatorRetrySafe *bool

	// search is the name, description and category lowercased once, joined
	// by NULs, so that List compares rather than lowercases every tool.
	search string
}

// Trust is an operator's override of a tool's trust facts. Nil fields keep
// the current value.
type Trust struct {
	PaymentVerified  *bool
	EndpointVerified *bool
	// RetrySafe says whether a request of the tool may be sent again after
	// it may have reached the provider (see Version.RetrySafe).
	RetrySafe *bool
}

// RetrySafe reports whether a request of this tool may be sent again once
// it may have reached the provider: a repeat does no harm because the tool
// only reads (readOnly) or the provider applies a repeat once (idempotent),
// or because the operator says so. Only such tools are retried after a
// request may have left, and re-run when a retry takes over a dead run;
// the others end "ambiguous" instead, so nothing runs twice.
func (v *Version) RetrySafe() bool {
	if v.operatorRetrySafe != nil {
		return *v.operatorRetrySafe
	}
	c := v.Capabilities
	return c.Declared && (c.ReadOnly || c.Idempotent)
}

// Registry is a set of tools, safe for concurrent use.
type Registry struct {
	mu       sync.RWMutex
	current  map[string]*Version   // by slug
	byID     map[string]string     // id -> slug
	history  map[string][]*Version // by slug, oldest first
	origins  map[string]string     // operator origin overrides, by slug
	retry    map[string]bool       // operator retry-safety overrides, by slug
	now      func() time.Time
	ordering []*Version // the current versions in listing order: verified first, then newest
	// changes counts changes to ordering; index is the search index of
	// ordering as of some count, built by the first List that needs it.
	changes uint64
	index   atomic.Pointer[searchIndex]
	// watchers are told of each change (OnChange).
	watchers watchers
}

// searchIndex finds the versions whose search text holds a query without
// visiting every version. grams lists, for each three-byte sequence of the
// lowercased texts, the positions in ordering of the versions whose text
// has it, ascending; a query of three bytes or more can only be in the
// versions listed under each of its own, so the shortest such list is all
// there is to check. Shorter or unselective queries scan text, every
// version's search text in listing order with a NUL after each, in one
// pass through memory.
type searchIndex struct {
	changes uint64
	grams   map[uint32][]int32
	text    string
	starts  []int // where each version's text starts, by position in ordering
}

func gram(s string, i int) uint32 { return uint32(s[i])<<16 | uint32(s[i+1])<<8 | uint32(s[i+2]) }

// New returns an empty registry.
func New() *Registry {
	return &Registry{
		current: map[string]*Version{},
		byID:    map[string]string{},
		history: map[string][]*Version{},
		origins: map[string]string{},
		now:     time.Now,
	}
}

// Default is the registry the built-in tools register into.
var Default = New()

// Register adds a tool version to the Default registry.
func Register(t *Tool) error { return Default.Register(t) }

// MustRegister is Register for init(): it panics on an invalid definition,
// which is a programming error in the tool's package.
func MustRegister(t *Tool) {
	if err := Default.Register(t); err != nil {
		panic(err)
	}
}

// slugPattern is a name of lowercase letters, digits and dashes, or two
// joined by one dot: a namespace (an upstream MCP server's id) and a name.
var slugPattern = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?)?$`)

// Register adds a tool version. A higher version of a registered slug
// replaces it as the current version; the earlier stays listed in Versions.
// The definition is copied, so later changes by the caller have no effect.
func (r *Registry) Register(t *Tool) error {
	if err := validateTool(t); err != nil {
		return err
	}
	def := cloneTool(t)
	if def.ID == "" {
		def.ID = StableID("tool:" + def.Slug)
	}
	if def.Provider.ID == "" {
		def.Provider.ID = StableID("provider:" + def.Provider.Name)
	}
	if def.Pricing.Currency == "" {
		def.Pricing.Currency = "USD"
	}
	if def.UpdatedAt.IsZero() {
		def.UpdatedAt = r.now().UTC()
	}

	// Deferred first, so run last: watchers hear of it once r.mu is free.
	changed := false
	defer r.watchers.notifyIf(&changed)
	r.mu.Lock()
	defer r.mu.Unlock()
	if cur, ok := r.current[def.Slug]; ok {
		if def.Version <= cur.Tool.Version {
			return fmt.Errorf("%w: %s version %d (current is %d)", ErrDuplicate, def.Slug, def.Version, cur.Tool.Version)
		}
		if cur.Tool.ID != def.ID {
			return fmt.Errorf("%w: %s changed its id between versions", ErrInvalidTool, def.Slug)
		}
	} else if other, taken := r.byID[def.ID]; taken {
		return fmt.Errorf("%w: id %s is already used by %s", ErrInvalidTool, def.ID, other)
	}
	v, err := r.build(&def)
	if err != nil {
		return err
	}
	prev := r.current[def.Slug]
	r.current[def.Slug] = v
	r.byID[def.ID] = def.Slug
	r.history[def.Slug] = append(r.history[def.Slug], v)
	r.place(def.Slug, prev)
	changed = true
	return nil
}

// cloneTool copies a definition deeply enough that nothing the caller keeps
// can change a registered version behind its digest.
func cloneTool(t *Tool) Tool {
	def := *t
	def.Tags = append([]string(nil), t.Tags...)
	def.InputSchema = append(json.RawMessage(nil), t.InputSchema...)
	if t.OutputSchema != nil {
		def.OutputSchema = append(json.RawMessage(nil), t.OutputSchema...)
	}
	def.ExampleInput = append(json.RawMessage(nil), t.ExampleInput...)
	def.ExampleOutput = append(json.RawMessage(nil), t.ExampleOutput...)
	def.HTTP = t.HTTP.clone()
	def.Upstream = t.Upstream.clone()
	if t.Capabilities != nil {
		c := *t.Capabilities
		c.AllowedOutboundDomains = append([]string(nil), t.Capabilities.AllowedOutboundDomains...)
		// The flags are pointers too: a caller flipping one must not change a
		// registered version, nor the digest of a later rebuild of it.
		for _, p := range []**bool{&c.ReadOnly, &c.Destructive, &c.Idempotent, &c.OpenWorld,
			&c.ReadsPrivateData, &c.SeesUntrustedContent, &c.WritesExternalData, &c.SendsMessages,
			&c.SpendsMoney, &c.ExecutesCode, &c.RequiresUserCredential} {
			if *p != nil {
				*p = Bool(**p)
			}
		}
		def.Capabilities = &c
	}
	if t.LogoURL != nil {
		logo := *t.LogoURL
		def.LogoURL = &logo
	}
	if t.Endpoint.VerifiedAt != nil {
		at := *t.Endpoint.VerifiedAt
		def.Endpoint.VerifiedAt = &at
	}
	return def
}

func validateTool(t *Tool) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidTool, fmt.Sprintf(format, args...))
	}
	switch {
	case t == nil:
		return bad("nil tool")
	case !slugPattern.MatchString(t.Slug):
		return bad("slug %q must be lowercase letters, digits and dashes, with at most one dot between a namespace and a name", t.Slug)
	case strings.TrimSpace(t.Name) == "":
		return bad("%s has no name", t.Slug)
	case t.Version < 1:
		return bad("%s version must be 1 or more", t.Slug)
	case len(t.InputSchema) == 0:
		return bad("%s has no input schema", t.Slug)
	case t.Invoke == nil && (t.BuildRequest == nil || t.Normalize == nil):
		return bad("%s needs BuildRequest and Normalize, or Invoke", t.Slug)
	case t.Pricing.Type != PricingFree && t.Pricing.Type != PricingPerCall:
		return bad("%s pricing type %q is not free or per_call", t.Slug, t.Pricing.Type)
	case t.Pricing.Amount.IsNegative():
		return bad("%s has a negative price", t.Slug)
	case CheckPrice(t.Pricing.Amount) != nil:
		return bad("%s: its price %v", t.Slug, ErrPriceTooLarge)
	case t.Pricing.Type == PricingFree && !t.Pricing.Amount.IsZero():
		return bad("%s is free but has a price", t.Slug)
	case t.Pricing.Currency != "" && t.Pricing.Currency != "USD":
		return bad("%s is priced in %q: only USD is supported", t.Slug, t.Pricing.Currency)
	case t.ID != "" && uuid.Validate(t.ID) != nil:
		return bad("%s id %q is not a UUID", t.Slug, t.ID)
	}
	if t.Invoke != nil && t.Endpoint.Origin == "" {
		return nil // reached by its own means, not at an origin
	}
	if err := validateOrigin(t.Endpoint.Origin); err != nil {
		return bad("%s: %v", t.Slug, err)
	}
	return nil
}

func validateOrigin(origin string) error {
	// Even an empty query or fragment ("https://h?", "https://h#") would
	// corrupt origin+path.
	if _, err := weburl.Check(origin, weburl.Allow{}); err != nil {
		return fmt.Errorf("origin %q must be scheme://host[:port]", origin)
	}
	return nil
}

// build derives a Version from a definition with the registry's overrides.
// The caller holds r.mu.
func (r *Registry) build(def *Tool) (*Version, error) {
	origin := strings.TrimSuffix(def.Endpoint.Origin, "/")
	override, hasOverride := r.origins[def.Slug]
	if hasOverride {
		origin = override
	}
	in, err := CompileSchema(def.InputSchema)
	if err != nil {
		return nil, fmt.Errorf("%w: %s input: %v", ErrInvalidTool, def.Slug, err)
	}
	var out *Schema
	if len(def.OutputSchema) > 0 && string(def.OutputSchema) != "null" {
		if out, err = CompileSchema(def.OutputSchema); err != nil {
			return nil, fmt.Errorf("%w: %s output: %v", ErrInvalidTool, def.Slug, err)
		}
	}
	var retrySafe *bool
	if safe, ok := r.retry[def.Slug]; ok {
		retrySafe = &safe
	}
	v := &Version{
		Tool:              def,
		operatorRetrySafe: retrySafe,
		Origin:            origin,
		Capabilities:      NormalizeCapabilities(def.Capabilities, origin),
		Input:             in,
		Output:            out,
		OperatorOrigin:    hasOverride,
		search:            strings.ToLower(def.Name) + "\x00" + strings.ToLower(def.Description) + "\x00" + strings.ToLower(def.Category),
	}
	if def.Immutable {
		if v.Digest, err = ManifestOf(def, origin).Digest(); err != nil {
			return nil, fmt.Errorf("%w: %s manifest: %v", ErrInvalidTool, def.Slug, err)
		}
	}
	return v, nil
}

// Lookup returns the current version of the tool with this slug or id.
func (r *Registry) Lookup(slugOrID string) (*Version, error) {
	probe.Lookup()
	r.mu.RLock()
	defer r.mu.RUnlock()
	if v, ok := r.current[slugOrID]; ok {
		return v, nil
	}
	if slug, ok := r.byID[slugOrID]; ok {
		return r.current[slug], nil
	}
	return nil, fmt.Errorf("%w: %q", ErrNotFound, slugOrID)
}

// Versions returns every registered version of a tool, oldest first.
func (r *Registry) Versions(slugOrID string) ([]*Version, error) {
	cur, err := r.Lookup(slugOrID)
	if err != nil {
		return nil, err
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return append([]*Version(nil), r.history[cur.Tool.Slug]...), nil
}

// List returns the current versions whose name, description or category
// contains q (case-insensitively; empty q matches all), verified endpoints
// first, then the most recently updated, then by slug; limit and offset page
// through them. total counts every match.
func (r *Registry) List(q string, limit, offset int) (versions []*Version, total int) {
	q = strings.ToLower(strings.TrimSpace(q))
	r.mu.RLock()
	defer r.mu.RUnlock()
	take := func(v *Version) {
		if total >= offset && len(versions) < limit {
			versions = append(versions, v)
		}
		total++
	}
	if q == "" || strings.IndexByte(q, 0) >= 0 {
		for _, v := range r.ordering {
			if q == "" || matches(v, q) {
				take(v)
			}
		}
		return versions, total
	}
	// Without a NUL in q, no match can straddle two fields or two versions.
	idx := r.searchIndex()
	if cands, ok := idx.candidates(q); ok && len(cands) <= len(r.ordering)/8 {
		for _, k := range cands {
			if v := r.ordering[k]; strings.Contains(v.search, q) {
				take(v)
			}
		}
		return versions, total
	}
	for at := 0; at < len(idx.text); {
		i := strings.Index(idx.text[at:], q)
		if i < 0 {
			break
		}
		// The version whose text holds the match: the last one starting at or before it.
		k := sort.SearchInts(idx.starts, at+i+1) - 1
		take(r.ordering[k])
		at = len(idx.text)
		if k+1 < len(idx.starts) {
			at = idx.starts[k+1]
		}
	}
	return versions, total
}

// candidates returns the positions of the versions that may hold q, from
// the shortest list of q's three-byte sequences; ok is false when q is too
// short to have any.
func (idx *searchIndex) candidates(q string) (cands []int32, ok bool) {
	if len(q) < 3 {
		return nil, false
	}
	for i := 0; i+3 <= len(q); i++ {
		list := idx.grams[gram(q, i)]
		if len(list) == 0 {
			return nil, true // no version has this part of q
		}
		if !ok || len(list) < len(cands) {
			cands, ok = list, true
		}
	}
	return cands, true
}

// searchIndex returns the search index of the current ordering, building it
// when the ordering has changed since it was last built. The caller holds
// r.mu for reading at least, so ordering cannot change meanwhile; two Lists
// may both build it, to the same result.
func (r *Registry) searchIndex() *searchIndex {
	if idx := r.index.Load(); idx != nil && idx.changes == r.changes {
		return idx
	}
	size := 0
	for _, v := range r.ordering {
		size += len(v.search) + 1
	}
	var b strings.Builder
	b.Grow(size)
	idx := &searchIndex{changes: r.changes, grams: map[uint32][]int32{}, starts: make([]int, len(r.ordering))}
	for k, v := range r.ordering {
		idx.starts[k] = b.Len()
		b.WriteString(v.search)
		b.WriteByte(0)
		for i := 0; i+3 <= len(v.search); i++ {
			g := gram(v.search, i)
			if g>>16 == 0 || g>>8&0xff == 0 || g&0xff == 0 {
				continue // spans two fields: no query without a NUL has it
			}
			if list := idx.grams[g]; len(list) == 0 || list[len(list)-1] != int32(k) {
				idx.grams[g] = append(list, int32(k))
			}
		}
	}
	idx.text = b.String()
	r.index.Store(idx)
	return idx
}

// matches reports whether q, lowercased, is in the name, description or
// category of v.
func matches(v *Version, q string) bool {
	t := v.Tool
	return strings.Contains(strings.ToLower(t.Name), q) ||
		strings.Contains(strings.ToLower(t.Description), q) ||
		strings.Contains(strings.ToLower(t.Category), q)
}

// listsBefore is the listing order: verified endpoints first, then the
// most recently updated, then by slug.
func listsBefore(a, b *Tool) bool {
	if a.Endpoint.Verified != b.Endpoint.Verified {
		return a.Endpoint.Verified
	}
	if !a.UpdatedAt.Equal(b.UpdatedAt) {
		return a.UpdatedAt.After(b.UpdatedAt)
	}
	return a.Slug < b.Slug
}

// place puts the current version of slug where it belongs in the listing
// order, in place of prev, the version it replaces (nil for a new tool): one
// binary search and one move, rather than sorting every tool on every
// change, which made registering ten thousand tools take minutes. The caller
// holds r.mu.
func (r *Registry) place(slug string, prev *Version) {
	if prev != nil {
		i := sort.Search(len(r.ordering), func(i int) bool { return !listsBefore(r.ordering[i].Tool, prev.Tool) })
		if i < len(r.ordering) && r.ordering[i] == prev {
			r.ordering = slices.Delete(r.ordering, i, i+1)
		} else if i = slices.Index(r.ordering, prev); i >= 0 { // unreachable while the order is total
			r.ordering = slices.Delete(r.ordering, i, i+1)
		}
	}
	v := r.current[slug]
	i := sort.Search(len(r.ordering), func(i int) bool { return listsBefore(v.Tool, r.ordering[i].Tool) })
	r.ordering = slices.Insert(r.ordering, i, v)
	r.changes++
}

// SetTrust applies an operator's trust override to the current version of a
// tool: a payment account or an endpoint marked verified (or not). Trust is
// not part of the manifest, so the digest does not change.
func (r *Registry) SetTrust(slugOrID string, t Trust) error {
	changed := false
	defer r.watchers.notifyIf(&changed)
	r.mu.Lock()
	defer r.mu.Unlock()
	slug, err := r.resolve(slugOrID)
	if err != nil {
		return err
	}
	cur := r.current[slug]
	def := *cur.Tool
	if t.PaymentVerified != nil {
		def.Provider.PaymentVerified = *t.PaymentVerified
	}
	if t.EndpointVerified != nil && def.Endpoint.Verified != *t.EndpointVerified {
		def.Endpoint.Verified = *t.EndpointVerified
		def.Endpoint.VerifiedAt = nil
		if def.Endpoint.Verified {
			at := r.now().UTC()
			def.Endpoint.VerifiedAt = &at
		}
	}
	next := *cur
	next.Tool = &def
	if t.RetrySafe != nil {
		// Kept by slug, as origins are, so later versions keep it too.
		if r.retry == nil {
			r.retry = map[string]bool{}
		}
		r.retry[slug] = *t.RetrySafe
		safe := *t.RetrySafe
		next.operatorRetrySafe = &safe
	}
	r.replace(slug, &next)
	changed = true
	return nil
}

// SetOrigin points a tool at another origin (a mirror, a recorded fixture
// server). That origin becomes the tool's allowed destination. The endpoint
// is part of the manifest, so the digest changes and earlier approvals and
// quotes of the tool go stale, as they should: they approved another
// destination.
func (r *Registry) SetOrigin(slugOrID, origin string) error {
	origin = strings.TrimSuffix(origin, "/")
	if err := validateOrigin(origin); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidTool, err)
	}
	changed := false
	defer r.watchers.notifyIf(&changed)
	r.mu.Lock()
	defer r.mu.Unlock()
	slug, err := r.resolve(slugOrID)
	if err != nil {
		return err
	}
	r.origins[slug] = origin
	v, err := r.build(r.current[slug].Tool)
	if err != nil {
		return err
	}
	r.replace(slug, v)
	changed = true
	return nil
}

// resolve maps a slug or id to a slug. The caller holds r.mu.
func (r *Registry) resolve(slugOrID string) (string, error) {
	if _, ok := r.current[slugOrID]; ok {
		return slugOrID, nil
	}
	if slug, ok := r.byID[slugOrID]; ok {
		return slug, nil
	}
	return "", fmt.Errorf("%w: %q", ErrNotFound, slugOrID)
}

// replace publishes a new current version in place of the old one, in the
// history too. The caller holds r.mu.
func (r *Registry) replace(slug string, v *Version) {
	prev := r.current[slug]
	r.current[slug] = v
	h := r.history[slug]
	h[len(h)-1] = v
	r.place(slug, prev)
}
