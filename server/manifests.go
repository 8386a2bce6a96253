package server

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/toolgate/toolgate/registry"
)

// loadToolManifests loads the manifests the config's "tools" globs name,
// relative to dir (the config file's directory, absolute: registerManifests
// reads the files from the file system's root), into reg, before the rest
// of the config is read: "upstreams", "trust" and per-tool spend controls
// may name the tools they define. A glob that matches nothing, or a
// malformed one, is a *ConfigError at tools[i]; a bad manifest is a
// *registry.ManifestError naming its file.
func loadToolManifests(data []byte, dir string, reg *registry.Registry) ([]string, error) {
	root, err := parseDocument(data)
	if err != nil {
		return nil, err
	}
	fields, err := root.members()
	if err != nil {
		return nil, err
	}
	origins, err := operatorOrigins(root)
	if err != nil {
		return nil, err
	}
	var patterns []string
	for _, f := range fields {
		if f.name == "tools" {
			items, err := f.items()
			if err != nil {
				return nil, err
			}
			for _, item := range items {
				p, err := item.str()
				if err != nil {
					return nil, err
				}
				if strings.TrimSpace(p) == "" {
					return nil, item.errorf("must be a file pattern such as \"tools/*.json\"")
				}
				full := p
				if !filepath.IsAbs(full) {
					full = filepath.Join(dir, p)
				}
				matches, err := filepath.Glob(full)
				if err != nil {
					return nil, item.errorf("%q is not a valid pattern: %v", p, err)
				}
				if len(matches) == 0 {
					return nil, item.errorf("%q matches no file (patterns are relative to the config file)", p)
				}
				patterns = append(patterns, full)
			}
		}
	}
	if len(patterns) == 0 {
		return nil, nil
	}
	if _, err := registerManifests(reg, patterns, origins); err != nil {
		return nil, err
	}
	return patterns, nil
}

// operatorOrigins reads the config's "upstreams": the tools the operator
// points somewhere, manifest tools among them, whose own origin may then be
// plain HTTP. Whether each names a tool is checked with the rest of the
// config, once the manifests are registered.
func operatorOrigins(root node) (map[string]string, error) {
	fields, err := root.members()
	if err != nil {
		return nil, err
	}
	origins := map[string]string{}
	for _, f := range fields {
		if f.name != "upstreams" {
			continue
		}
		ups, err := f.members()
		if err != nil {
			return nil, err
		}
		for _, u := range ups {
			s, err := u.str()
			if err != nil {
				return nil, err
			}
			if !validOrigin(s) {
				return nil, u.errorf("%q is not an origin: use scheme://host[:port] with http or https and no path", s)
			}
			origins[u.name] = strings.TrimSuffix(s, "/")
		}
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
