package registry

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"unicode/utf8"
)

// maxManifestBytes bounds a manifest file: a tool description is a few
// kilobytes, and a file far larger is a mistake, not a tool.
const maxManifestBytes = 1 << 20

// maxManifestDepth bounds how deeply a manifest may nest, so a hostile file
// cannot exhaust the stack of anything that walks it.
const maxManifestDepth = 64

// decodeManifestJSON decodes one JSON document with numbers kept as
// json.Number, refusing a member name given twice in any object (a person
// reviewing the file would read one value while the gateway used the
// other), nesting beyond maxManifestDepth, and anything after the document.
func decodeManifestJSON(file string, data []byte) (any, error) {
	if len(data) > maxManifestBytes {
		return nil, manifestErrorf(file, "", "the file is larger than %d bytes", maxManifestBytes)
	}
	if !utf8.Valid(data) {
		// encoding/json would quietly replace the bad bytes, and a digest
		// must hash what the file says.
		return nil, manifestErrorf(file, "", "the file is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeValue(file, dec, "", 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, manifestErrorf(file, "", "the file holds more than one JSON value")
	}
	return v, nil
}

func decodeValue(file string, dec *json.Decoder, path jsonPath, depth int) (any, error) {
	if depth > maxManifestDepth {
		return nil, manifestErrorf(file, path, "nests deeper than %d levels", maxManifestDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, syntaxError(file, path, err)
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			obj := map[string]any{}
			for dec.More() {
				tok, err := dec.Token()
				if err != nil {
					return nil, syntaxError(file, path, err)
				}
				name, _ := tok.(string)
				if _, dup := obj[name]; dup {
					return nil, manifestErrorf(file, path.key(name), "is given twice")
				}
				if obj[name], err = decodeValue(file, dec, path.key(name), depth+1); err != nil {
					return nil, err
				}
			}
			if _, err := dec.Token(); err != nil {
				return nil, syntaxError(file, path, err)
			}
			return obj, nil
		case '[':
			arr := []any{}
			for i := 0; dec.More(); i++ {
				v, err := decodeValue(file, dec, path.index(i), depth+1)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, syntaxError(file, path, err)
			}
			return arr, nil
		}
		return nil, manifestErrorf(file, path, "invalid JSON")
	default:
		return tok, nil
	}
}

// syntaxError reports malformed JSON by byte offset, without quoting the
// file (it may hold anything, a pasted key among it).
func syntaxError(file string, path jsonPath, err error) error {
	var syn *json.SyntaxError
	switch {
	case errors.As(err, &syn):
		return manifestErrorf(file, "", "invalid JSON at byte %d", syn.Offset)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		if path == "" {
			return manifestErrorf(file, "", "invalid JSON: the document is empty or cut short")
		}
		return manifestErrorf(file, path, "invalid JSON: the document is cut short")
	}
	return manifestErrorf(file, path, "invalid JSON")
}
