package registry

import (
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"
)

// ErrNoManifests: a pattern given to LoadManifests matches no file, which
// is nearly always a mistyped directory rather than an intent.
var ErrNoManifests = errors.New("registry: no manifest matches")

// LoadManifests parses every manifest in fsys whose path matches one of
// patterns (fs.Glob syntax, such as "tools/*.json") and registers the
// tools, returning their versions in the order of the files. A file that
// two patterns match is loaded once.
//
// Every manifest is parsed, and checked against the registry and the
// others, before any is registered, so a mistake leaves the registry as it
// was. Errors are *ManifestError naming the file (as fsys names it), except
// a malformed pattern or one that matches nothing (ErrNoManifests).
func (r *Registry) LoadManifests(fsys fs.FS, patterns []string, opts *ParseOptions) ([]*Version, error) {
	type loaded struct {
		file string
		tool *Tool
	}
	var all []loaded
	seen := map[string]bool{}
	for _, pattern := range patterns {
		files, err := fs.Glob(fsys, pattern)
		if err != nil {
			return nil, fmt.Errorf("registry: manifest pattern %q: %w", pattern, err)
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("%w %q", ErrNoManifests, pattern)
		}
		for _, file := range files {
			if seen[file] {
				continue
			}
			seen[file] = true
			data, err := fs.ReadFile(fsys, file)
			if err != nil {
				return nil, manifestErrorf(file, "", "cannot read the file: %s", fileProblem(err))
			}
			t, err := ParseManifest(file, data, opts)
			if err != nil {
				return nil, err
			}
			all = append(all, loaded{file, t})
		}
	}

	// The same slug and version twice is a mistake, as is a version not
	// above the one registered; Register would refuse them half way through.
	defined := map[string]string{} // slug@version -> file
	for _, l := range all {
		key := fmt.Sprintf("%s@%d", l.tool.Slug, l.tool.Version)
		if other, dup := defined[key]; dup {
			return nil, manifestErrorf(l.file, "version", "%s version %d is also defined by %s", l.tool.Slug, l.tool.Version, other)
		}
		defined[key] = l.file
		if err := r.checkNewVersion(l.file, l.tool); err != nil {
			return nil, err
		}
	}
	// Lower versions first, so that each registers over the one before.
	order := make([]int, len(all))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		ta, tb := all[order[a]].tool, all[order[b]].tool
		if ta.Slug != tb.Slug {
			return ta.Slug < tb.Slug
		}
		return ta.Version < tb.Version
	})
	for _, i := range order {
		l := all[i]
		if err := r.registerManifestTool(l.file, l.tool); err != nil {
			return nil, err
		}
	}
	out := make([]*Version, 0, len(all))
	for _, l := range all {
		vs, err := r.Versions(l.tool.Slug)
		if err != nil {
			return nil, err
		}
		for _, v := range vs {
			if v.Tool.Version == l.tool.Version {
				out = append(out, v)
				break
			}
		}
	}
	return out, nil
}

// RegisterManifestTool registers one tool parsed from the manifest file, as
// LoadManifests registers each: a version not above the one registered
// under its slug is refused, and every error is a *ManifestError naming
// file. It returns the version registered.
func (r *Registry) RegisterManifestTool(file string, t *Tool) (*Version, error) {
	if err := r.checkNewVersion(file, t); err != nil {
		return nil, err
	}
	if err := r.registerManifestTool(file, t); err != nil {
		return nil, err
	}
	vs, err := r.Versions(t.Slug)
	if err != nil {
		return nil, err
	}
	for _, v := range vs {
		if v.Tool.Version == t.Version {
			return v, nil
		}
	}
	return nil, fmt.Errorf("registry: %s version %d is not registered after all", t.Slug, t.Version)
}

// checkNewVersion refuses a manifest's tool whose version is not above the
// one registered under its slug: Register would refuse it, and a file
// cannot replace what is served.
func (r *Registry) checkNewVersion(file string, t *Tool) error {
	if cur, err := r.Lookup(t.Slug); err == nil && cur.Tool.Slug == t.Slug && cur.Tool.Version >= t.Version {
		return manifestErrorf(file, "version", "%s version %d is already registered; a manifest can only add a higher version", t.Slug, cur.Tool.Version)
	}
	return nil
}

// registerManifestTool registers t, its error naming file.
func (r *Registry) registerManifestTool(file string, t *Tool) error {
	if err := r.Register(t); err != nil {
		return manifestErrorf(file, "slug", "%s", strings.TrimPrefix(err.Error(), "registry: "))
	}
	return nil
}
