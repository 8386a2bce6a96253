package server

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/toolgate/toolgate/registry"
)

// loadToolManifests loads the manifests the config's "tools" globs name,
// relative to dir (the config file's directory, absolute: registerManifests
// reads the files from the file system's root), into reg, before the rest
// of the config is checked: "upstreams", "trust" and per-tool spend
// controls may name the tools they define. A glob that matches nothing, or
// a malformed one, is a *ConfigError at tools[i]; a bad manifest is a
// *registry.ManifestError naming its file.
func (doc *configJSON) loadToolManifests(dir string, reg *registry.Registry) ([]string, error) {
	origins, err := operatorOrigins(doc.Upstreams)
	if err != nil {
		return nil, err
	}
	var patterns []string
	for i, p := range strs(doc.Tools) {
		if strings.TrimSpace(p) == "" {
			return nil, errorf(index("tools", i), "must be a file pattern such as \"tools/*.json\"")
		}
		full := p
		if !filepath.IsAbs(full) {
			full = filepath.Join(dir, p)
		}
		matches, err := filepath.Glob(full)
		if err != nil {
			return nil, errorf(index("tools", i), "%q is not a valid pattern: %v", p, err)
		}
		if len(matches) == 0 {
			return nil, errorf(index("tools", i), "%q matches no file (patterns are relative to the config file)", p)
		}
		patterns = append(patterns, full)
	}
	if len(patterns) == 0 {
		return nil, nil
	}
	if _, err := registerManifests(reg, patterns, origins); err != nil {
		return nil, err
	}
	return patterns, nil
}

// operatorOrigins are the config's "upstreams": the tools the operator
// points somewhere, manifest tools among them, whose own origin may then be
// plain HTTP. Whether each names a tool is checked with the rest of the
// config, once the manifests are registered.
func operatorOrigins(upstreams map[string]*string) (map[string]string, error) {
	origins := map[string]string{}
	for _, slug := range slices.Sorted(maps.Keys(upstreams)) {
		if upstreams[slug] == nil {
			continue
		}
		origin, err := checkOrigin(at("upstreams", slug), *upstreams[slug])
		if err != nil {
			return nil, err
		}
		origins[slug] = origin
	}
	return origins, nil
}

// registerManifests loads the manifests matching patterns (absolute file
// globs) into reg in one batch, so that a mistake in any leaves reg as it
// was. Errors name files by their absolute paths.
func registerManifests(reg *registry.Registry, patterns []string, origins map[string]string) ([]*registry.Version, error) {
	var root string
	rel := make([]string, len(patterns))
	for i, p := range patterns {
		p = filepath.Clean(p)
		r := filepath.VolumeName(p) + string(filepath.Separator)
		if root != "" && r != root {
			return nil, fmt.Errorf("tool manifests must all be on one volume (%s and %s)", root, r)
		}
		root = r
		rel[i] = filepath.ToSlash(strings.TrimPrefix(p, r))
	}
	vs, err := reg.LoadManifests(os.DirFS(root), rel, &registry.ParseOptions{OperatorOrigins: origins})
	var me *registry.ManifestError
	if errors.As(err, &me) {
		located := *me
		located.File = filepath.Join(root, filepath.FromSlash(me.File))
		return nil, &located
	}
	return vs, err
}

// registry makes the registry of a config made in Go: the built-in tools
// when BuiltinTools is set, then the manifests Tools names (absolute
// globs), with the config's upstreams as the operator's origins.
func (c *Config) registry() (*registry.Registry, error) {
	reg := registry.New()
	if c.BuiltinTools {
		var err error
		if reg, err = newRegistry(); err != nil {
			return nil, err
		}
	}
	if len(c.Tools) > 0 {
		if _, err := registerManifests(reg, c.Tools, c.Upstreams); err != nil {
			return nil, err
		}
	}
	return reg, nil
}
