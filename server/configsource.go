package server

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/toolgate/toolgate/internal/jcs"
)

// configSource is what a config was parsed from: the file's path (empty
// for ParseConfig's text) and its bytes, with their SHA-256.
type configSource struct {
	path string
	data []byte
	sum  [sha256.Size]byte
}

// SHA256 is the SHA-256, in hex, of the bytes the config was parsed from
// (the file LoadConfig read, or ParseConfig's text), which every instance
// of a fleet shows as toolgate_config_info; "" for a Config made in Go,
// which has no bytes to hash: the same Config can be made by different
// code, and its Go values (functions among them) have no canonical form.
func (c *Config) SHA256() string {
	if c.source.data == nil {
		return ""
	}
	return hex.EncodeToString(c.source.sum[:])
}

// shortSHA256 is the first 12 hex digits of SHA256, as config check and
// toolgate_config_info show it: enough to tell configs apart at a glance.
func (c *Config) shortSHA256() string {
	sum := c.SHA256()
	return sum[:min(len(sum), 12)]
}

// fileNames are the names in the file of the Config fields whose name is
// not the field's with a lowercase first letter.
var fileNames = map[string]string{"OAuth": "oauth", "MCPServers": "mcpServers", "PinsFile": "pins"}

// fileName is the config file's name of a Config field.
func fileName(field string) string {
	if name, ok := fileNames[field]; ok {
		return name
	}
	r, size := utf8.DecodeRuneInString(field)
	return string(unicode.ToLower(r)) + field[size:]
}

// restartFields are the top-level fields, by their names in the file, in
// which next differs from was, except those in skip (Config field names):
// what a reload leaves as it runs until a restart. Two configs parsed from
// text are compared member by member in canonical JSON, so that flags
// that override the file's values (-listen) do not count as a change;
// otherwise field by field, where a function (an MCP server's Transport)
// always counts as changed.
func restartFields(was, next *Config, skip map[string]bool) []string {
	var changed []string
	if was.source.data != nil && next.source.data != nil {
		var a, b map[string]json.RawMessage
		if json.Unmarshal(was.source.data, &a) != nil || json.Unmarshal(next.source.data, &b) != nil {
			return nil // both parsed already: not reached
		}
		skipped := map[string]bool{}
		for field := range skip {
			skipped[fileName(field)] = true
		}
		for _, name := range slices.Sorted(maps.Keys(merged(a, b))) {
			if !skipped[name] && !sameJSON(a[name], b[name]) {
				changed = append(changed, name)
			}
		}
		return changed
	}
	va, vb := reflect.ValueOf(was).Elem(), reflect.ValueOf(next).Elem()
	for i := range va.NumField() {
		f := va.Type().Field(i)
		if !f.IsExported() || f.Name == "Registry" || skip[f.Name] {
			continue
		}
		if !reflect.DeepEqual(va.Field(i).Interface(), vb.Field(i).Interface()) {
			changed = append(changed, fileName(f.Name))
		}
	}
	slices.Sort(changed)
	return changed
}

// merged is the union of a's and b's members.
func merged(a, b map[string]json.RawMessage) map[string]json.RawMessage {
	out := maps.Clone(a)
	if out == nil {
		out = map[string]json.RawMessage{}
	}
	maps.Copy(out, b)
	return out
}

// sameJSON reports whether a and b are the same JSON value, whatever
// their spacing and the order of their members; a member absent (nil) is
// the same as null.
func sameJSON(a, b json.RawMessage) bool {
	canonical := func(v json.RawMessage) []byte {
		if len(v) == 0 || strings.TrimSpace(string(v)) == "null" {
			return nil
		}
		c, err := jcs.Canonicalize(v)
		if err != nil {
			return v
		}
		return c
	}
	return bytes.Equal(canonical(a), canonical(b))
}
