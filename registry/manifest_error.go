package registry

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// ErrInvalidManifest is what every *ManifestError matches with errors.Is.
var ErrInvalidManifest = errors.New("registry: invalid tool manifest")

// ManifestError is a mistake in a tool manifest: the file, the JSON path of
// the value at fault ("endpoint.query.limit", "tags[2]"; empty for the
// document as a whole) and what is wrong with it. Its message never quotes
// a credential.
type ManifestError struct {
	File   string
	Path   string
	Reason string
}

func (e *ManifestError) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteString(": ")
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Reason)
	return b.String()
}

// Unwrap makes every ManifestError match ErrInvalidManifest.
func (e *ManifestError) Unwrap() error { return ErrInvalidManifest }

// plainKey is a member name that reads unambiguously after a dot.
var plainKey = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$-]*$`)

// jsonPath is the path of a value in a manifest, in the form the server's
// config errors use: members after dots, indexes in brackets.
type jsonPath string

// key is the path of member name of the object at p.
func (p jsonPath) key(name string) jsonPath {
	if !plainKey.MatchString(name) {
		quoted, _ := json.Marshal(name)
		return p + jsonPath("["+string(quoted)+"]")
	}
	if p == "" {
		return jsonPath(name)
	}
	return p + "." + jsonPath(name)
}

// index is the path of element i of the array at p.
func (p jsonPath) index(i int) jsonPath {
	return p + jsonPath("["+strconv.Itoa(i)+"]")
}

// within reports whether p is outer or a path inside it: "endpoint.query.q"
// and "endpoint" itself are within "endpoint", "endpointX" is not. Every
// path is within the document's, "".
func (p jsonPath) within(outer jsonPath) bool {
	if outer == "" || p == outer {
		return true
	}
	rest, ok := strings.CutPrefix(string(p), string(outer))
	return ok && (rest[0] == '.' || rest[0] == '[')
}

// manifestErrorf builds a *ManifestError at path.
func manifestErrorf(file string, path jsonPath, format string, args ...any) *ManifestError {
	return &ManifestError{File: file, Path: string(path), Reason: fmt.Sprintf(format, args...)}
}
