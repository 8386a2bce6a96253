package redact

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const key = "sk-7f3a9c1e-DO-NOT-LEAK"

func TestText(t *testing.T) {
	t.Parallel()
	s := New(key, "short", "")
	tests := []struct{ name, in, want string }{
		{"absent", "nothing here", "nothing here"},
		{"whole", "key " + key + " used", "key [redacted] used"},
		{"twice", key + key, "[redacted]"},
		{"zero-width space inside", "key " + key[:3] + "\u200b" + key[3:] + ".", "key [redacted]."},
		{"every kind of invisible", key[:1] + "\u00ad" + key[1:4] + "\u200c\u200d\u2060\ufeff" + key[4:9] + "\u202e" + key[9:] + "\u202c!", "[redacted]\u202c!"},
		{"invisible around stays outside", "\u200b" + key + "\u200b", "\u200b[redacted]\u200b"},
		{"invalid UTF-8 beside", "\xff" + key[:5] + "\u200b" + key[5:] + "\xfe", "\xff[redacted]\xfe"},
		{"a short value is not a secret", "short story", "short story"},
		{"a piece is not the whole", key[:12], key[:12]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, s.Text(tt.in))
		})
	}
	var none *Secrets
	assert.Equal(t, key, none.Text(key))
	assert.True(t, New("tiny", "\u200bsmall\u200b").Empty(), "invisible characters do not make a value long enough")
}

func TestExcerptRedactsBeforeTheCutAndRunsAfter(t *testing.T) {
	t.Parallel()
	s := New(key)
	cut := func(t string) string { // a 200-character cut that drops invisible characters, as registry.Excerpt does
		t = visible(t)
		if r := []rune(t); len(r) > 200 {
			return string(r[:200]) + "…"
		}
		return t
	}
	pad := strings.Repeat("x", 185)
	assert.Equal(t, pad+"[redacted]", s.Excerpt(pad+key[:4]+"\u200b"+key[4:], cut), "found before the cut")
	assert.Equal(t, pad+"[redacted]", s.Excerpt(pad+key[:15], cut), "a piece the provider cut")
	assert.Equal(t, "token [redacted]...", s.Excerpt("token "+key[3:11]+"...", cut), "eight characters")
	assert.Equal(t, "token "+key[3:10]+"...", s.Excerpt("token "+key[3:10]+"...", cut), "seven are not a run")
	assert.Equal(t, "[redacted] and [redacted]", s.Excerpt(key[:9]+" and "+key[len(key)-9:], cut))
	var none *Secrets
	assert.Equal(t, "abc", none.Excerpt("abc", cut))
}

func TestJSON(t *testing.T) {
	t.Parallel()
	s := New(key, "12345678901")
	tests := []struct{ name, in, want string }{
		{"none", `{"a":"b","n":1}`, `{"a":"b","n":1}`},
		{"value", `{"a":"x ` + key + `"}`, `{"a":"x [redacted]"}`},
		{"member name", `{"` + key + `":1}`, `{"[redacted]":1}`},
		{"raw invisible", `["` + key[:3] + "\u200b" + key[3:] + `"]`, `["[redacted]"]`},
		{"escaped invisible", `["` + key[:3] + `\u200b` + key[3:] + `"]`, `["[redacted]"]`},
		{"escaped letters", `["\u0073` + key[1:] + `","\"quoted\""]`, `["[redacted]","\"quoted\""]`},
		{"number", `{"n":-12345678901.5e3,"m":2}`, `{"n":"[redacted]","m":2}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := s.JSON([]byte(tt.in))
			assert.Equal(t, tt.want, string(got))
			assert.True(t, json.Valid(got))
		})
	}
}

func TestValue(t *testing.T) {
	t.Parallel()
	s := New(key, "12345678901")
	v := s.Value(map[string]any{
		"a":               []any{"x " + key[:2] + "\ufeff" + key[2:], json.Number("12345678901"), json.Number("7"), true},
		"echo " + key:     "b",
		"untouched value": nil,
	})
	got, err := json.Marshal(v)
	require.NoError(t, err)
	assert.JSONEq(t, `{"a":["x [redacted]","[redacted]",7,true],"echo [redacted]":"b","untouched value":null}`, string(got))
}
