package mcpupstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"time"
)

// PinsFormat names the pins file's format, its schemaVersion.
const PinsFormat = "toolgate.mcp-pins/v1"

// Pins are the digests an operator reviewed and accepts, by slug, for the
// tools of upstream MCP servers: a defence against a server that changes
// what a tool says it does after it was reviewed. With pins configured, a
// tool whose digest is not its pin is served but blocked. Each pin keeps
// the manifest it was taken of, so that the next pinning can say what
// changed, field by field, and a reviewer can read the file.
type Pins struct {
	Tools map[string]Pin
}

// Pin is one tool's accepted digest and the manifest it is the digest of.
type Pin struct {
	Digest   string          `json:"digest"`
	Manifest json.RawMessage `json:"manifest"`
}

type pinsFile struct {
	SchemaVersion string         `json:"schemaVersion"`
	Tools         map[string]Pin `json:"tools"`
}

// ReadPins reads a pins file. A file that does not exist holds no pins.
func ReadPins(path string) (*Pins, error) {
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &Pins{Tools: map[string]Pin{}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("mcpupstream: cannot read the pins file: %w", err)
	}
	return parsePins(raw)
}

func parsePins(raw []byte) (*Pins, error) {
	var f pinsFile
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("mcpupstream: the pins file is not a pins file: %v", err)
	}
	if f.SchemaVersion != PinsFormat {
		return nil, fmt.Errorf("mcpupstream: the pins file's schemaVersion is %q, not %q", f.SchemaVersion, PinsFormat)
	}
	if f.Tools == nil {
		f.Tools = map[string]Pin{}
	}
	return &Pins{Tools: f.Tools}, nil
}

// Write writes the pins to path, replacing the file at once: a gateway
// reading it meanwhile sees the old pins or the new, never half of them.
func (p *Pins) Write(path string) error {
	raw, err := json.MarshalIndent(pinsFile{SchemaVersion: PinsFormat, Tools: p.Tools}, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".pins-*.json")
	if err != nil {
		return fmt.Errorf("mcpupstream: cannot write the pins file: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(raw, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("mcpupstream: cannot write the pins file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("mcpupstream: cannot write the pins file: %w", err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("mcpupstream: cannot write the pins file: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("mcpupstream: cannot write the pins file: %w", err)
	}
	return nil
}

// Change kinds.
const (
	Added   = "added"
	Removed = "removed"
	Changed = "changed"
)

// Change is a difference between two sets of pins: a tool added, removed,
// or changed, and then which fields of its manifest ("description",
// "upstream.tool.inputSchema", ...).
type Change struct {
	Kind   string
	Slug   string
	Fields []string
}

// Diff says what changed from old to new, by slug.
func Diff(old, new *Pins) []Change {
	var out []Change
	slugs := slices.Sorted(maps.Keys(old.Tools))
	for _, slug := range slices.Sorted(maps.Keys(new.Tools)) {
		if _, ok := old.Tools[slug]; !ok {
			slugs = append(slugs, slug)
		}
	}
	slices.Sort(slugs)
	for _, slug := range slugs {
		o, inOld := old.Tools[slug]
		n, inNew := new.Tools[slug]
		switch {
		case !inOld:
			out = append(out, Change{Kind: Added, Slug: slug})
		case !inNew:
			out = append(out, Change{Kind: Removed, Slug: slug})
		case o.Digest != n.Digest:
			out = append(out, Change{Kind: Changed, Slug: slug, Fields: changedFields(o.Manifest, n.Manifest)})
		}
	}
	return out
}

// changedFields names the fields of two manifests that differ: the
// top-level ones, and within the upstream part, which parts of the
// upstream's definition.
func changedFields(a, b json.RawMessage) []string {
	var ma, mb map[string]any
	if json.Unmarshal(a, &ma) != nil || json.Unmarshal(b, &mb) != nil {
		return []string{"manifest"}
	}
	var out []string
	diff := func(prefix string, x, y map[string]any, descend func(string, map[string]any, map[string]any) bool) {
		keys := slices.Sorted(maps.Keys(x))
		for k := range y {
			if _, ok := x[k]; !ok {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			if reflect.DeepEqual(x[k], y[k]) {
				continue
			}
			xs, _ := x[k].(map[string]any)
			ys, _ := y[k].(map[string]any)
			if descend != nil && xs != nil && ys != nil && descend(prefix+k, xs, ys) {
				continue
			}
			out = append(out, prefix+k)
		}
	}
	var upstream func(string, map[string]any, map[string]any) bool
	upstream = func(path string, x, y map[string]any) bool {
		switch path {
		case "upstream":
			diff("upstream.", x, y, upstream)
			return true
		case "upstream.tool":
			diff("upstream.tool.", x, y, nil)
			return true
		}
		return false
	}
	diff("", ma, mb, upstream)
	return out
}

// pinState is the pins in force: whether pins are required, and the
// pinned digest by slug.
type pinState struct {
	mu       sync.RWMutex
	required bool
	digests  map[string]string
	// path, and what it was when last read, to tell when it changes.
	path    string
	modTime time.Time
	size    int64
}

func (p *pinState) get() (required bool, digests map[string]string) {
	if p == nil {
		return false, nil
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.required, p.digests
}

// load reads the pins file when it changed since last read; changed says
// it did.
func (p *pinState) load(force bool) (changed bool, err error) {
	info, err := os.Stat(p.path)
	var mod time.Time
	var size int64 = -1
	if err == nil {
		mod, size = info.ModTime(), info.Size()
	} else if !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("mcpupstream: cannot read the pins file: %w", err)
	}
	p.mu.RLock()
	same := p.digests != nil && mod.Equal(p.modTime) && size == p.size
	p.mu.RUnlock()
	if same && !force {
		return false, nil
	}
	pins, err := ReadPins(p.path)
	if err != nil {
		return false, err
	}
	digests := make(map[string]string, len(pins.Tools))
	for slug, pin := range pins.Tools {
		digests[slug] = pin.Digest
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	changed = !maps.Equal(digests, p.digests)
	p.required, p.digests, p.modTime, p.size = true, digests, mod, size
	return changed, nil
}
