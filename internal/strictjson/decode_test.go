package strictjson_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/strictjson"
)

// upper decodes itself: a string in capitals, or {"lower": "..."} decoded
// strictly in turn.
type upper string

func (u *upper) UnmarshalJSON(raw []byte) error {
	if len(raw) > 0 && raw[0] == '{' {
		var v struct {
			Lower string `json:"lower"`
		}
		if err := strictjson.Decode(raw, &v); err != nil {
			return err
		}
		*u = upper(strings.ToUpper(v.Lower))
		return nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return errors.New("not a string")
	}
	if s != strings.ToUpper(s) {
		return errors.New("not in capitals")
	}
	*u = upper(s)
	return nil
}

type team struct {
	Name    upper            `json:"name"`
	Members []string         `json:"members"`
	Quotas  map[string]int   `json:"quotas"`
	Lead    *upper           `json:"lead"`
	Tags    map[string]upper `json:"tags"`
}

type org struct {
	Teams  []team `json:"teams"`
	Active bool   `json:"active"`
}

func TestDecodeNamesWhereAValueIsWrong(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, doc string
		path      string // of the *ValueError
		kind      string
		msg       string // its Err's, "" for a kind that does not fit
	}{
		{"a kind in a slice of a slice", `{"teams":[{"name":"A"},{"members":["x",2]}]}`, "teams[1].members[1]", "number", ""},
		{"a map's value", `{"teams":[{"quotas":{"a":1,"b":"2"}}]}`, "teams[0].quotas.b", "string", ""},
		{"an object for an array", `{"teams":{"name":"A"}}`, "teams", "object", ""},
		{"the document", `[1]`, "", "array", ""},
		{"a value's own refusal", `{"teams":[{"name":"A"},{"name":"b"}]}`, "teams[1].name", "string", "not in capitals"},
		{"behind a pointer", `{"teams":[{"lead":"b"}]}`, "teams[0].lead", "string", "not in capitals"},
		{"the first in the document's order", `{"active":"yes","teams":[{"name":"b"}]}`, "active", "string", ""},
		{"a strict decode within", `{"teams":[{"tags":{"t":{"lower":2}}}]}`, "teams[0].tags.t.lower", "number", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var o org
			err := strictjson.Decode([]byte(c.doc), &o)
			var ve *strictjson.ValueError
			require.ErrorAs(t, err, &ve)
			assert.Equal(t, c.path, ve.Path)
			assert.Equal(t, c.kind, ve.Kind)
			if c.msg == "" {
				assert.NoError(t, ve.Err)
			} else {
				assert.EqualError(t, ve.Err, c.msg)
			}
		})
	}
}

func TestDecodeRefusesMembersWithTheirPlace(t *testing.T) {
	t.Parallel()
	var o org
	err := strictjson.Decode([]byte(`{"teams":[{},{"membres":[]}]}`), &o)
	var me *strictjson.MemberError
	require.ErrorAs(t, err, &me)
	assert.Equal(t, strictjson.MemberError{Path: "teams[1].membres", Object: "teams[1]", Name: "membres",
		Known: []string{"name", "members", "quotas", "lead", "tags"}}, *me)

	err = strictjson.Decode([]byte(`{"teams":[{"tags":{"t":{"lower":"a","lower":"b"}}}]}`), &o)
	require.ErrorAs(t, err, &me)
	assert.Equal(t, strictjson.MemberError{Path: "teams[0].tags.t.lower", Object: "teams[0].tags.t", Name: "lower", Duplicate: true}, *me)

	err = strictjson.Decode([]byte(`{"active":true,"active":false}`), &o)
	require.ErrorAs(t, err, &me)
	assert.Equal(t, strictjson.MemberError{Path: "active", Name: "active", Duplicate: true}, *me)
}

func TestDecodeAccepts(t *testing.T) {
	t.Parallel()
	var o org
	require.NoError(t, strictjson.Decode([]byte(`{"teams":[{"name":"A","members":["x"],"quotas":{"a":1},"lead":null,"tags":{"t":{"lower":"b"}}}],"active":true}`), &o))
	assert.Equal(t, upper("A"), o.Teams[0].Name)
	assert.Equal(t, upper("B"), o.Teams[0].Tags["t"])
	assert.Nil(t, o.Teams[0].Lead)
	assert.True(t, o.Active)
}
