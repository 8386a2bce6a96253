package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/toolgate/toolgate/internal/strictjson"
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

// errorf is a ConfigError at path.
func errorf(path, format string, args ...any) error {
	return &ConfigError{Path: path, Msg: fmt.Sprintf(format, args...)}
}

// at is the path of the member name of the value at path.
func at(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// index is the path of the i-th element of the array at path.
func index(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

// decodeConfig decodes data, one JSON object, into v with strictjson: no
// member its struct does not know, none twice, and a value that does not
// fit named by its path. Errors are *ConfigError.
func decodeConfig(data []byte, v any) error {
	raw, err := parseDocument(data)
	if err != nil {
		return err
	}
	if k := kindOf(raw); k != "an object" {
		return errorf("", "must be an object, not %s", k)
	}
	return configErrorOf(strictjson.Decode(raw, v))
}

// decodeConfigPart decodes the members of data, one JSON object, that v
// has, passing over the others unchecked: for a command that reads a part
// of a config file, and leaves the rest to the server. No member may be
// given twice, even among the rest.
func decodeConfigPart(data []byte, v any) error {
	raw, err := parseDocument(data)
	if err != nil {
		return err
	}
	if k := kindOf(raw); k != "an object" {
		return errorf("", "must be an object, not %s", k)
	}
	if err := strictjson.Check(raw, nil); err != nil {
		return configErrorOf(err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		if located := strictjson.Locate(raw, v); located != nil {
			return configErrorOf(located)
		}
		return configErrorOf(err)
	}
	return nil
}

// configErrorOf says err, strictjson's, in the config's words.
func configErrorOf(err error) error {
	var member *strictjson.MemberError
	var value *strictjson.ValueError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &member):
		if member.Duplicate {
			return errorf(member.Object, "field %q is given twice", member.Name)
		}
		return errorf(member.Object, "unknown field %q%s", member.Name, suggest.DidYouMean(member.Name, member.Known))
	case errors.As(err, &value):
		var ce *ConfigError
		if errors.As(value.Err, &ce) {
			return &ConfigError{Path: joinPath(value.Path, ce.Path), Msg: ce.Msg}
		}
		if value.Err != nil {
			return &ConfigError{Path: value.Path, Msg: value.Err.Error()}
		}
		return errorf(value.Path, "must be %s, not %s", want(value.Type), article(value.Kind))
	}
	return &ConfigError{Msg: "invalid JSON: " + strings.TrimPrefix(err.Error(), "json: ")}
}

// joinPath is the path of inner, a path within the value at outer.
func joinPath(outer, inner string) string {
	switch {
	case inner == "":
		return outer
	case outer == "" || inner[0] == '[':
		return outer + inner
	}
	return outer + "." + inner
}

// want says what a value of type t is written as.
func want(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return "a number"
}

// article is strictjson's name of a JSON kind as messages say it.
func article(kind string) string {
	switch kind {
	case "object", "array":
		return "an " + kind
	case "null", "":
		return "null"
	}
	return "a " + kind
}

// kindOf names the JSON kind of raw, for messages.
func kindOf(raw []byte) string {
	switch b := bytes.TrimSpace(raw); {
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

// parseDocument checks that data is one JSON value, reporting a syntax error
// by line and column, and returns it.
func parseDocument(data []byte) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			// Offset counts the bytes read, the offending one included.
			line, col := position(data, syn.Offset-1)
			return nil, &ConfigError{Msg: fmt.Sprintf("invalid JSON at line %d, column %d: %s", line, col, syn.Error())}
		}
		if errors.Is(err, io.EOF) {
			return nil, &ConfigError{Msg: "the file is empty; it must hold a JSON object"}
		}
		return nil, &ConfigError{Msg: "invalid JSON: " + strings.TrimPrefix(err.Error(), "json: ")}
	}
	if dec.More() {
		return nil, &ConfigError{Msg: "the file holds more than one JSON value"}
	}
	return raw, nil
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

// The config's small value types decode themselves, so that a mistake is
// said in the config's words; strictjson adds where it is. Each refuses
// null: a member given as null is absent, as a nil pointer, and null is
// no element of an array.

// str is a string in an array.
type str string

func (s *str) UnmarshalJSON(raw []byte) error {
	var v string
	if kindOf(raw) != "a string" || json.Unmarshal(raw, &v) != nil {
		return fmt.Errorf("must be a string, not %s", kindOf(raw))
	}
	*s = str(v)
	return nil
}

// strs is ss as strings.
func strs(ss []str) []string {
	if ss == nil {
		return nil
	}
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = string(s)
	}
	return out
}

// text is a string that names or describes something the server keeps or
// shows (an id, a name): one holding a NUL or another C0 control
// character (tab, line feed and carriage return aside) is refused at
// start, as no store could keep it.
type text string

func (t *text) UnmarshalJSON(raw []byte) error {
	var s str
	if err := s.UnmarshalJSON(raw); err != nil {
		return err
	}
	if p := textcheck.Problem(string(s)); p != "" {
		return errors.New(p)
	}
	*t = text(s)
	return nil
}

// texts is ts as strings.
func texts(ts []text) []string {
	if ts == nil {
		return nil
	}
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = string(t)
	}
	return out
}

// count is a non-negative integer, such as a rate limit.
type count int

func (c *count) UnmarshalJSON(raw []byte) error {
	if kindOf(raw) != "a number" {
		return fmt.Errorf("must be a whole number, not %s", kindOf(raw))
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) > 32 {
		// Refused unread: a number of a million digits would cost seconds
		// to parse, and is no whole number in range whatever it is.
		return errors.New("is not a whole number from 0 to 2147483647")
	}
	d, err := decimal.NewFromString(string(raw))
	if err != nil || !d.IsInteger() || d.IsNegative() || d.GreaterThan(decimal.NewFromInt(1<<31-1)) {
		return fmt.Errorf("%s is not a whole number from 0 to 2147483647", raw)
	}
	*c = count(d.IntPart())
	return nil
}

// intPtr is c as the *int of a limit.
func (c *count) intPtr() *int {
	if c == nil {
		return nil
	}
	n := int(*c)
	return &n
}

// amount is a non-negative USD amount with at most 4 decimals and 20
// digits before the point (toolgatetype.ParseAmount). It should be a
// string, as amounts are everywhere on the wire; a JSON number is taken by
// its exact text, never through a float.
type amount decimal.Decimal

func (a *amount) UnmarshalJSON(raw []byte) error {
	var s string
	switch kindOf(raw) {
	case "a string":
		if err := json.Unmarshal(raw, &s); err != nil {
			return errors.New("must be a string")
		}
	case "a number":
		s = string(bytes.TrimSpace(raw))
	default:
		return fmt.Errorf(`must be a decimal amount such as "25.0000", not %s`, kindOf(raw))
	}
	d, err := toolgatetype.ParseAmount(strings.TrimSpace(s))
	// The text is quoted back unless it may be a million characters long.
	quoted := ""
	if len(s) <= 64 {
		quoted = strconv.Quote(s) + " "
	}
	switch {
	case errors.Is(err, toolgatetype.ErrAmountTooPrecise):
		return fmt.Errorf("%smust be a non-negative amount with at most 4 decimals", quoted)
	case errors.Is(err, toolgatetype.ErrAmountOutOfBounds):
		return err
	case err != nil:
		return fmt.Errorf("%sis not a decimal amount", quoted)
	}
	if d.IsNegative() || d.Exponent() < -4 && !d.Equal(d.Round(4)) {
		return fmt.Errorf("%q must be a non-negative amount with at most 4 decimals", s)
	}
	*a = amount(d)
	return nil
}

// decimalPtr is a as the *decimal.Decimal of a limit.
func (a *amount) decimalPtr() *decimal.Decimal {
	if a == nil {
		return nil
	}
	d := decimal.Decimal(*a)
	return &d
}

// duration is a Go duration string such as "5m" or "90s", longer than
// zero.
type duration time.Duration

func (d *duration) UnmarshalJSON(raw []byte) error {
	var s string
	if kindOf(raw) != "a string" || json.Unmarshal(raw, &s) != nil {
		return fmt.Errorf(`must be a duration such as "5m", not %s`, kindOf(raw))
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf(`%q is not a duration (use a form such as "5m" or "90s")`, s)
	}
	if v <= 0 {
		return fmt.Errorf("%q must be longer than zero", s)
	}
	*d = duration(v)
	return nil
}

// value is d as a time.Duration, 0 when absent.
func (d *duration) value() time.Duration {
	if d == nil {
		return 0
	}
	return time.Duration(*d)
}
