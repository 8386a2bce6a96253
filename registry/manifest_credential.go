package registry

import (
	"os"
	"regexp"
	"strings"

	"github.com/toolgate/toolgate/internal/redact"
)

// credential is a provider key the gateway holds for a manifest tool: the
// header it goes in, an optional scheme before it, and the value. The value
// lives only here, inside the tool's request builder and response reader;
// no exported field, registry entry, manifest or digest holds it, and it
// prints as a placeholder should anything ever format it.
type credential struct {
	header  string
	scheme  string
	value   string
	secrets *redact.Secrets // the value, for taking it out of what the provider sends back
}

const redacted = redact.Mark

// String keeps the value out of anything that prints a credential.
func (c credential) String() string { return "credential{" + c.header + ": " + redacted + "}" }

// GoString keeps the value out of %#v too.
func (c credential) GoString() string { return c.String() }

// headerValue is what goes in the header: "scheme value", or the value.
func (c credential) headerValue() string {
	if c.scheme == "" {
		return c.value
	}
	return c.scheme + " " + c.value
}

// redactor takes the value out of what the provider sends back, so that a
// provider echoing the key (in its output or an error message, cut short or
// with invisible characters inside) cannot show it to a caller or put it in
// an execution record. A value shorter than redact.MinLen characters is not
// taken out: it would take out ordinary words.
func (c *credential) redactor() *redact.Secrets {
	if c == nil {
		return nil
	}
	return c.secrets
}

// conventionalEnvName is the usual shape of an environment variable's name.
// A name of another shape is not quoted in errors: it may be the key itself,
// pasted in the wrong place.
var conventionalEnvName = regexp.MustCompile(`^[A-Z_][A-Z0-9_]{0,127}$`)

// readCredential reads a credential's value from the environment or a
// file, whose path the manifest's checks found absolute. Errors name where
// the value was looked for, never the value.
func readCredential(file string, path jsonPath, mc manifestCredential, opts ParseOptions) (credential, *ManifestError) {
	c := credential{header: mc.Header, scheme: mc.Scheme}
	switch {
	case mc.Env != "":
		name := "the environment variable it names"
		if conventionalEnvName.MatchString(mc.Env) {
			name = "the environment variable " + mc.Env
		}
		v, ok := opts.LookupEnv(mc.Env)
		if !ok {
			return credential{}, manifestErrorf(file, path.key("env"), "%s is not set", name)
		}
		c.value = strings.TrimSpace(v)
		if c.value == "" {
			return credential{}, manifestErrorf(file, path.key("env"), "%s is empty", name)
		}
	case mc.File != "":
		raw, err := opts.ReadFile(mc.File)
		if err != nil {
			return credential{}, manifestErrorf(file, path.key("file"), "cannot read %s: %s", mc.File, fileProblem(err))
		}
		c.value = strings.TrimSpace(string(raw))
		if c.value == "" {
			return credential{}, manifestErrorf(file, path.key("file"), "%s is empty", mc.File)
		}
	}
	if !validHeaderValue(c.value) {
		// A line break would end the header and start another.
		return credential{}, manifestErrorf(file, path, "the value holds a line break or another control character")
	}
	c.secrets = redact.New(c.value)
	return c, nil
}

// fileProblem says why a file could not be read, without the error's own
// text, which repeats the path.
func fileProblem(err error) string {
	switch {
	case os.IsNotExist(err):
		return "no such file"
	case os.IsPermission(err):
		return "permission denied"
	}
	return "read error"
}

// validHeaderValue reports whether s can be sent as a header value as it
// is: visible ASCII or UTF-8, spaces and tabs, nothing that could end the
// header early or be read differently by another parser.
func validHeaderValue(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}
