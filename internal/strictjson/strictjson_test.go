package strictjson_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/strictjson"
)

type approval struct {
	ManifestDigest *string `json:"manifestDigest,omitempty"`
	GrantID        *string `json:"grantId,omitempty"`
}

type callBody struct {
	QuoteID  *string         `json:"quoteId"`
	Input    json.RawMessage `json:"input"`
	Approval *approval       `json:"approval,omitempty"`
	Tags     []approval      `json:"tags"`
	Limits   map[string]approval
	At       time.Time `json:"at"`
	Ignored  string    `json:"-"`
	hidden   string
	Embedded
}

type Embedded struct {
	Note     string `json:"note"`
	QuoteID  string `json:"quoteId"` // shadowed by the outer field
	Promoted int
}

type tree struct {
	Name     string `json:"name"`
	Children []tree `json:"children"`
}

func shapeOf[T any]() *strictjson.Shape { return strictjson.ShapeOf(reflect.TypeFor[*T]()) }

func TestCheckRefusesWhatEncodingJSONWouldBend(t *testing.T) {
	t.Parallel()
	call := shapeOf[callBody]()
	for _, c := range []struct {
		name, doc string
		shape     *strictjson.Shape
		want      string // "" when accepted
		duplicate bool
	}{
		{"exact names", `{"quoteId":"q","input":{"a":1},"approval":{"grantId":"g"},"note":"n","Promoted":1,"Limits":{"x":{"grantId":"g"}}}`, call, "", false},
		{"name in another case", `{"quoteID":"q"}`, call, "quoteID", false},
		{"nested name in another case", `{"approval":{"grantID":"g"}}`, call, "approval.grantID", false},
		{"name inside an array of structs", `{"tags":[{"grantId":"a"},{"GrantId":"b"}]}`, call, "tags[1].GrantId", false},
		{"name inside a map of structs", `{"Limits":{"free":{"manifestdigest":"x"}}}`, call, "Limits.free.manifestdigest", false},
		{"a field left out of JSON", `{"Ignored":"x"}`, call, "Ignored", false},
		{"an unexported field", `{"hidden":"x"}`, call, "hidden", false},
		{"duplicate at the top", `{"quoteId":"fake","input":{},"quoteId":"real"}`, call, "quoteId", true},
		{"duplicate spelled with an escape", `{"quoteId":"a","quote\u0049d":"b","quot\u0065Id":"c"}`, call, "quoteId", true},
		{"duplicate inside raw input", `{"input":{"a":{"b":[1,{"c":1,"c":2}]}}}`, call, "input.a.b[1].c", true},
		{"duplicate inside a map", `{"Limits":{"x":{},"x":{}}}`, call, "Limits.x", true},
		{"free names, duplicates refused", `{"Anything":{"x":1,"y":[{"x":1,"x":1}]}}`, nil, "Anything.y[0].x", true},
		{"a pair of surrogates is one name", `{"\ud83d\ude00":1,"😀":2}`, nil, "😀", true},
		{"lone surrogates are the same name to encoding/json", `{"\ud800":1,"\udbff":2}`, nil, "\ufffd", true},
		{"distinct names", `{"a":1,"A":2,"b":{"a":1}}`, nil, "", false},
		{"many members", manyMembers(100, false), nil, "", false},
		{"many members, one twice", manyMembers(100, true), nil, "m7", true},
		{"a type that decodes itself keeps its names", `{"at":"2026-01-01T00:00:00Z"}`, call, "", false},
		{"an object where a string goes is the decoder's", `{"quoteId":{"x":1}}`, call, "", false},
		{"an array where a struct goes is the decoder's", `{"approval":[{"x":1}]}`, call, "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := strictjson.Check([]byte(c.doc), c.shape)
			if c.want == "" {
				require.NoError(t, err)
				return
			}
			var m *strictjson.MemberError
			require.ErrorAs(t, err, &m)
			assert.Equal(t, c.want, m.Path)
			assert.Equal(t, c.duplicate, m.Duplicate)
		})
	}
}

func manyMembers(n int, dup bool) string {
	var b strings.Builder
	b.WriteString("{")
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`"m` + strconv.Itoa(i) + `":` + strconv.Itoa(i))
	}
	if dup {
		b.WriteString(`,"m7":0`)
	}
	b.WriteString("}")
	return b.String()
}

func TestCheckLeavesSyntaxToTheDecoder(t *testing.T) {
	t.Parallel()
	for _, doc := range []string{``, `{`, `{"a"}`, `{"a":}`, `{"a":1,}`, `[1,]`, `{"a":1} {}`, "{\"\x01\":1}", `{"a\u12":1}`,
		strings.Repeat("[", strictjson.MaxDepth+1) + strings.Repeat("]", strictjson.MaxDepth+1)} {
		assert.ErrorIs(t, strictjson.Check([]byte(doc), nil), strictjson.ErrNotJSON, "%q", doc)
	}
}

func TestMemberErrorNamesCutLongNames(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 100)
	err := strictjson.Check([]byte(`{"`+long+`":1,"`+long+`":2}`), nil)
	var m *strictjson.MemberError
	require.ErrorAs(t, err, &m)
	assert.Equal(t, strings.Repeat("é", 32)+"…", m.Path)
	assert.Equal(t, `duplicate field "`+m.Path+`"`, m.Error())
}

func TestRecursiveTypes(t *testing.T) {
	t.Parallel()
	s := shapeOf[tree]()
	require.NoError(t, strictjson.Check([]byte(`{"name":"a","children":[{"name":"b","children":[{"name":"c"}]}]}`), s))
	var m *strictjson.MemberError
	require.ErrorAs(t, strictjson.Check([]byte(`{"children":[{"children":[{"Name":"c"}]}]}`), s), &m)
	assert.Equal(t, "children[0].children[0].Name", m.Path)
}

// duplicateByDecoder is the reference: encoding/json's own tokenizer, which
// decodes every name, reports whether doc (valid JSON) has a duplicate.
func duplicateByDecoder(doc []byte) bool {
	type frame struct {
		names   map[string]bool // nil for an array
		wantKey bool
	}
	var stack []*frame
	valueDone := func() {
		if n := len(stack); n > 0 && stack[n-1].names != nil {
			stack[n-1].wantKey = true
		}
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		if n := len(stack); n > 0 && stack[n-1].wantKey {
			if name, ok := tok.(string); ok {
				if stack[n-1].names[name] {
					return true
				}
				stack[n-1].names[name] = true
				stack[n-1].wantKey = false
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{names: map[string]bool{}, wantKey: true})
		case json.Delim('['):
			stack = append(stack, &frame{})
		case json.Delim(']'), json.Delim('}'):
			stack = stack[:len(stack)-1]
			valueDone()
		default:
			valueDone()
		}
	}
}

// FuzzCheck: on valid JSON, Check finds a duplicate exactly when
// encoding/json's tokenizer sees one, and never a syntax problem.
func FuzzCheck(f *testing.F) {
	for _, seed := range []string{`{"a":1,"a":2}`, `{"a":1,"\u0061":2}`, `{"a":{"b":1},"b":{"b":1}}`, `[{"x":1},{"x":1}]`,
		`{"\ud800":1,"\udc00":2}`, "{\"a\xff\":1,\"a\xfe\":2}", manyMembers(40, true), `{"":1,"":2}`, `"x"`, `1e5`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		err := strictjson.Check(doc, nil)
		if !json.Valid(doc) {
			return // the decoder refuses it; Check must only not panic
		}
		var m *strictjson.MemberError
		dup := errors.As(err, &m)
		if !dup && err != nil {
			t.Fatalf("valid JSON %q refused: %v", doc, err)
		}
		if want := duplicateByDecoder(doc); dup != want {
			t.Fatalf("%q: Check says duplicate %v (%v), encoding/json %v", doc, dup, err, want)
		}
	})
}

// BenchmarkCheck is the check's cost on a call body as agents send them,
// beside decoding the same body, which it precedes on every call.
func BenchmarkCheck(b *testing.B) {
	doc := []byte(`{"quoteId":"0b6f4c1e-6a43-4f61-9a39-2f0f3c7e1d2a","input":{"starttime":"2024-09-25","endtime":"2024-09-26","minmagnitude":4.5,"limit":10,"orderby":"time"},"approval":{"manifestDigest":"sha256:95bda28ea717ba931ac2a5c2375258d5b40fd5b89e6dc4902bcaddb688caf29d"}}`)
	shape := shapeOf[callBody]()
	b.Run("check", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(doc)))
		for b.Loop() {
			if err := strictjson.Check(doc, shape); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(doc)))
		for b.Loop() {
			var body callBody
			dec := json.NewDecoder(bytes.NewReader(doc))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&body); err != nil {
				b.Fatal(err)
			}
		}
	})
}
