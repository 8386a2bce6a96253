package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/toolgate/toolgate/internal/suggest"
	"github.com/toolgate/toolgate/internal/textcheck"
	"github.com/toolgate/toolgate/toolgatetype"
)

// ConfigError is a mistake in the config file, with the path of the field
// it is about ("principals[0].spendControls.dailyLimitUsd"; empty for the
// file as a whole).
type ConfigError struct {
	Path string
	Msg  string
}

func (e *ConfigError) Error() string {
	if e.Path == "" {
		return "config: " + e.Msg
	}
	return "config: " + e.Path + ": " + e.Msg
}

// node is one JSON value of the config file with its path. The file is
// walked by hand rather than decoded into structs because encoding/json
// names neither the array index nor the map key of a bad value, nor the
// object an unknown field was found in, and a config error must say
// exactly where to look.
type node struct {
	path string
	raw  json.RawMessage
}

// field is one member of an object, in file order.
type field struct {
	name string
	node
}

func (n node) errorf(format string, args ...any) error {
	return &ConfigError{Path: n.path, Msg: fmt.Sprintf(format, args...)}
}

func (n node) child(name string) node {
	if n.path == "" {
		return node{path: name}
	}
	return node{path: n.path + "." + name}
}

// kind names the JSON type of the value, for messages.
func (n node) kind() string {
	switch b := bytes.TrimSpace(n.raw); {
	case len(b) == 0:
		return "nothing"
	case b[0] == '{':
		return "an object"
	case b[0] == '[':
		return "an array"
	case b[0] == '"':
		return "a string"
	case b[0] == 't' || b[0] == 'f':
		return "a boolean"
	case b[0] == 'n':
		return "null"
	default:
		return "a number"
	}
}

func (n node) isNull() bool { return n.kind() == "null" }

// parseDocument checks that data is one JSON value, reporting a syntax error
// by line and column.
func parseDocument(data []byte) (node, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			// Offset counts the bytes read, the offending one included.
			line, col := position(data, syn.Offset-1)
			return node{}, &ConfigError{Msg: fmt.Sprintf("invalid JSON at line %d, column %d: %s", line, col, syn.Error())}
		}
		if errors.Is(err, io.EOF) {
			return node{}, &ConfigError{Msg: "the file is empty; it must hold a JSON object"}
		}
		return node{}, &ConfigError{Msg: "invalid JSON: " + strings.TrimPrefix(err.Error(), "json: ")}
	}
	if dec.More() {
		return node{}, &ConfigError{Msg: "the file holds more than one JSON value"}
	}
	return node{raw: raw}, nil
}

func position(data []byte, offset int64) (line, col int) {
	line, col = 1, 1
	for _, c := range data[:max(0, min(int(offset), len(data)))] {
		if c == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
}

// members returns the members of an object in file order, refusing a name
// given twice. Members whose value is null count as absent.
func (n node) members() ([]field, error) {
	if n.kind() != "an object" {
		return nil, n.errorf("must be an object, not %s", n.kind())
	}
	dec := json.NewDecoder(bytes.NewReader(n.raw))
	if _, err := dec.Token(); err != nil { // {
		return nil, n.errorf("invalid JSON: %v", err)
	}
	var out []field
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, n.errorf("invalid JSON: %v", err)
		}
		name, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, n.errorf("invalid JSON: %v", err)
		}
		if seen[name] {
			return nil, n.errorf("field %q is given twice", name)
		}
		seen[name] = true
		f := field{name: name, node: n.child(name)}
		f.raw = raw
		if !f.isNull() {
			out = append(out, f)
		}
	}
	return out, nil
}

// fields is members for an object of known shape: a name outside allowed
// is an unknown field.
func (n node) fields(allowed ...string) ([]field, error) {
	fs, err := n.members()
	if err != nil {
		return nil, err
	}
	for _, f := range fs {
		found := false
		for _, a := range allowed {
			if f.name == a {
				found = true
				break
			}
		}
		if !found {
			return nil, n.errorf("unknown field %q%s", f.name, suggest.DidYouMean(f.name, allowed))
		}
	}
	return fs, nil
}

// items returns the elements of an array.
func (n node) items() ([]node, error) {
	if n.kind() != "an array" {
		return nil, n.errorf("must be an array, not %s", n.kind())
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(n.raw, &raws); err != nil {
		return nil, n.errorf("invalid JSON: %v", err)
	}
	out := make([]node, len(raws))
	for i, raw := range raws {
		out[i] = node{path: fmt.Sprintf("%s[%d]", n.path, i), raw: raw}
	}
	return out, nil
}

func (n node) str() (string, error) {
	var s string
	if n.kind() != "a string" || json.Unmarshal(n.raw, &s) != nil {
		return "", n.errorf("must be a string, not %s", n.kind())
	}
	return s, nil
}

// text is a string that names or describes something the server keeps or
// shows (an id, a name): one holding a NUL or another C0 control
// character (tab, line feed and carriage return aside) is refused at
// start, as no store could keep it.
func (n node) text() (string, error) {
	s, err := n.str()
	if err != nil {
		return "", err
	}
	if p := textcheck.Problem(s); p != "" {
		return "", n.errorf("%s", p)
	}
	return s, nil
}

// texts is an array of text.
func (n node) texts() ([]string, error) {
	items, err := n.items()
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(items))
	for _, item := range items {
		s, err := item.text()
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func (n node) boolean() (bool, error) {
	var b bool
	if n.kind() != "a boolean" || json.Unmarshal(n.raw, &b) != nil {
		return false, n.errorf("must be true or false, not %s", n.kind())
	}
	return b, nil
}

// strings is an array of strings.
func (n node) strings() ([]string, error) {
	items, err := n.items()
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(items))
	for _, item := range items {
		s, err := item.str()
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// count is a non-negative integer, such as a rate limit.
func (n node) count() (int, error) {
	if n.kind() != "a number" {
		return 0, n.errorf("must be a whole number, not %s", n.kind())
	}
	raw := bytes.TrimSpace(n.raw)
	if len(raw) > 32 {
		// Refused unread: a number of a million digits would cost seconds
		// to parse, and is no whole number in range whatever it is.
		return 0, n.errorf("is not a whole number from 0 to 2147483647")
	}
	d, err := decimal.NewFromString(string(raw))
	if err != nil || !d.IsInteger() || d.IsNegative() || d.GreaterThan(decimal.NewFromInt(1<<31-1)) {
		return 0, n.errorf("%s is not a whole number from 0 to 2147483647", bytes.TrimSpace(n.raw))
	}
	return int(d.IntPart()), nil
}

// amount is a non-negative USD amount with at most 4 decimals and 20
// digits before the point (toolgatetype.ParseAmount). It should be
// a string, as amounts are everywhere on the wire; a JSON number is taken by
// its exact text, never through a float.
func (n node) amount() (decimal.Decimal, error) {
	var text string
	switch n.kind() {
	case "a string":
		text, _ = n.str()
	case "a number":
		text = string(bytes.TrimSpace(n.raw))
	default:
		return decimal.Decimal{}, n.errorf(`must be a decimal amount such as "25.0000", not %s`, n.kind())
	}
	d, err := toolgatetype.ParseAmount(strings.TrimSpace(text))
	// The text is quoted back unless it may be a million characters long.
	quoted := ""
	if len(text) <= 64 {
		quoted = strconv.Quote(text) + " "
	}
	switch {
	case errors.Is(err, toolgatetype.ErrAmountTooPrecise):
		return decimal.Decimal{}, n.errorf("%smust be a non-negative amount with at most 4 decimals", quoted)
	case errors.Is(err, toolgatetype.ErrAmountOutOfBounds):
		return decimal.Decimal{}, n.errorf("%v", err)
	case err != nil:
		return decimal.Decimal{}, n.errorf("%sis not a decimal amount", quoted)
	}
	if d.IsNegative() || d.Exponent() < -4 && !d.Equal(d.Round(4)) {
		return decimal.Decimal{}, n.errorf("%q must be a non-negative amount with at most 4 decimals", text)
	}
	return d, nil
}

// duration is a Go duration string such as "5m" or "90s".
func (n node) duration() (time.Duration, error) {
	s, err := n.str()
	if err != nil {
		return 0, n.errorf(`must be a duration such as "5m", not %s`, n.kind())
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, n.errorf(`%q is not a duration (use a form such as "5m" or "90s")`, s)
	}
	if d <= 0 {
		return 0, n.errorf("%q must be longer than zero", s)
	}
	return d, nil
}
