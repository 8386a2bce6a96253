package recorded

import (
	"net/url"
	"strings"
)

// param is one query parameter.
type param struct{ name, value string }

// orderedQuery reads a raw query string as PHP and Rack read theirs: each
// name once, in the order it first appears, with the last value given for
// it. Providers validate parameters in that order, so the first bad one is
// the one their error names. A value that does not unescape is kept as
// sent, as they keep it.
func orderedQuery(raw string) []param {
	var out []param
	index := map[string]int{}
	for _, pair := range strings.Split(raw, "&") {
		if pair == "" {
			continue
		}
		name, value, _ := strings.Cut(pair, "=")
		name, value = unescape(name), unescape(value)
		if name == "" {
			continue
		}
		if i, ok := index[name]; ok {
			out[i].value = value
			continue
		}
		index[name] = len(out)
		out = append(out, param{name, value})
	}
	return out
}

func unescape(s string) string {
	if u, err := url.QueryUnescape(s); err == nil {
		return u
	}
	return s
}

// queryValue returns the value of the named parameter and whether it was sent.
func queryValue(params []param, name string) (string, bool) {
	for _, p := range params {
		if p.name == name {
			return p.value, true
		}
	}
	return "", false
}
