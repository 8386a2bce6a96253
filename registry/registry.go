// Package registry holds the tools a gateway can quote and call: their
// definitions, compiled schemas, manifest digests and the operator's trust
// and origin overrides.
//
// Built-in tools register themselves into Default from init(), in the manner
// of database/sql drivers. A gateway can instead be given its own New()
// registry, which is what tests should do so they never share global state.
package registry

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
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
	Capabilities NormalizedCapabilities
	// Digest is the manifest digest, or "" when the tool has no immutable version.
	Digest string
	Input  *Schema
	Output *Schema // nil when the tool declares no output schema
	// OperatorOrigin is true when the operator configured Origin for this tool.
	OperatorOrigin bool
}

// Trust is an operator's override of a tool's trust facts. Nil fields keep
// the current value.
type Trust struct {
	PaymentVerified  *bool
	EndpointVerified *bool
}

// Registry is a set of tools, safe for concurrent use.
type Registry struct {
	mu       sync.RWMutex
	current  map[string]*Version   // by slug
	byID     map[string]string     // id -> slug
	history  map[string][]*Version // by slug, oldest first
	origins  map[string]string     // operator origin overrides, by slug
	now      func() time.Time
	ordering []string // slugs, re-sorted on change: verified first, then newest
}

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

var slugPattern = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$`)

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
	r.current[def.Slug] = v
	r.byID[def.ID] = def.Slug
	r.history[def.Slug] = append(r.history[def.Slug], v)
	r.reorder()
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
		return bad("slug %q must be lowercase letters, digits and dashes", t.Slug)
	case strings.TrimSpace(t.Name) == "":
		return bad("%s has no name", t.Slug)
	case t.Version < 1:
		return bad("%s version must be 1 or more", t.Slug)
	case len(t.InputSchema) == 0:
		return bad("%s has no input schema", t.Slug)
	case t.BuildRequest == nil || t.Normalize == nil:
		return bad("%s needs BuildRequest and Normalize", t.Slug)
	case t.Pricing.Type != PricingFree && t.Pricing.Type != PricingPerCall:
		return bad("%s pricing type %q is not free or per_call", t.Slug, t.Pricing.Type)
	case t.Pricing.Amount.IsNegative():
		return bad("%s has a negative price", t.Slug)
	case t.Pricing.Type == PricingFree && !t.Pricing.Amount.IsZero():
		return bad("%s is free but has a price", t.Slug)
	case t.Pricing.Currency != "" && t.Pricing.Currency != "USD":
		return bad("%s is priced in %q: only USD is supported", t.Slug, t.Pricing.Currency)
	case t.ID != "" && uuid.Validate(t.ID) != nil:
		return bad("%s id %q is not a UUID", t.Slug, t.ID)
	}
	if err := validateOrigin(t.Endpoint.Origin); err != nil {
		return bad("%s: %v", t.Slug, err)
	}
	return nil
}

func validateOrigin(origin string) error {
	u, err := url.Parse(origin)
	// ContainsAny catches an empty query or fragment ("https://h?", "https://h#"),
	// which url.Parse does not report and which would corrupt origin+path.
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Hostname() == "" ||
		(u.Path != "" && u.Path != "/") || strings.ContainsAny(origin, "?#") || u.User != nil {
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
	v := &Version{
		Tool:           def,
		Origin:         origin,
		Capabilities:   NormalizeCapabilities(def.Capabilities, origin),
		Input:          in,
		Output:         out,
		OperatorOrigin: hasOverride,
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
	for _, slug := range r.ordering {
		v := r.current[slug]
		if q != "" && !matches(v.Tool, q) {
			continue
		}
		if total >= offset && len(versions) < limit {
			versions = append(versions, v)
		}
		total++
	}
	return versions, total
}

func matches(t *Tool, q string) bool {
	return strings.Contains(strings.ToLower(t.Name), q) ||
		strings.Contains(strings.ToLower(t.Description), q) ||
		strings.Contains(strings.ToLower(t.Category), q)
}

// reorder sorts the listing order. The caller holds r.mu.
func (r *Registry) reorder() {
	r.ordering = r.ordering[:0]
	for slug := range r.current {
		r.ordering = append(r.ordering, slug)
	}
	sort.Slice(r.ordering, func(i, j int) bool {
		a, b := r.current[r.ordering[i]].Tool, r.current[r.ordering[j]].Tool
		if a.Endpoint.Verified != b.Endpoint.Verified {
			return a.Endpoint.Verified
		}
		if !a.UpdatedAt.Equal(b.UpdatedAt) {
			return a.UpdatedAt.After(b.UpdatedAt)
		}
		return a.Slug < b.Slug
	})
}

// SetTrust applies an operator's trust override to the current version of a
// tool: a payment account or an endpoint marked verified (or not). Trust is
// not part of the manifest, so the digest does not change.
func (r *Registry) SetTrust(slugOrID string, t Trust) error {
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
	r.replace(slug, &next)
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
	r.current[slug] = v
	h := r.history[slug]
	h[len(h)-1] = v
	r.reorder()
}
