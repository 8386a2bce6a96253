package mcpupstream

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/net/http/httpguts"

	"github.com/toolgate/toolgate/internal/weburl"
	"github.com/toolgate/toolgate/registry"
)

// Defaults of the fields of Server and Options left zero.
const (
	DefaultCallTimeout      = 30 * time.Second
	DefaultStartTimeout     = 30 * time.Second
	DefaultStopTimeout      = 5 * time.Second
	DefaultMinBackoff       = 250 * time.Millisecond
	DefaultMaxBackoff       = 30 * time.Second
	DefaultPinsPollInterval = 2 * time.Second
)

// MaxIDLength is the longest server id: it begins every slug of the
// server's tools.
const MaxIDLength = 24

var idPattern = regexp.MustCompile(`^[a-z0-9](?:-?[a-z0-9])*$`)

// Server is an upstream MCP server as the operator configures it. Exactly
// one of Command, URL and Transport says how it is reached.
type Server struct {
	// ID names the server: lowercase letters and digits, single dashes
	// between them, at most 24 characters. It is the namespace of its
	// tools' slugs ("{id}.{name}").
	ID string

	// Command is the program to start and its arguments: the server is
	// spoken to over its stdin and stdout. It sees only PATH and HOME from
	// the gateway's environment, and Env.
	Command []string
	// Env is the environment a Command gets beside PATH and HOME.
	Env map[string]Value

	// URL is a streamable HTTP endpoint ("https://mcp.example.com/mcp").
	// Only its origin is ever contacted, through the same egress guard as
	// every tool's upstream: the operator named it, so its address may be
	// an internal one.
	URL string
	// Credential is sent with every request to URL's origin, and nowhere
	// else.
	Credential *Credential
	// TokenExchange, for a URL server, sends each call a token exchanged
	// for the caller's own; nil sends what every request carries.
	TokenExchange *TokenExchange
	// HTTPTransport sends URL's requests; nil means upstream.NewTransport().
	// It is used only for URL's origin.
	HTTPTransport http.RoundTripper

	// Transport, for a program connecting a server of its own, returns a
	// fresh transport for each connection (go-sdk's in-memory transports,
	// say). Address and TransportName then say what it is, in the tools'
	// manifests.
	Transport     func() mcp.Transport
	Address       string
	TransportName string

	// Provider is who operates the server, as the registry shows it; the
	// name defaults to the id, the trust tier to "unverified".
	Provider Provider
	// Defaults apply to every tool of the server, then Tools by upstream
	// tool name, then Trust by slug: pricing, capabilities and trust come
	// from the operator, never from the upstream.
	Defaults ToolConfig
	Tools    map[string]ToolConfig
	// Trust is the operator's trust of single tools, by slug.
	Trust map[string]registry.Trust
	// Include chooses the tools served, as globs over upstream tool names
	// (path.Match); nil means every tool.
	Include []string
	// CallTimeout bounds each call (30 s when zero), any retry included; the
	// caller's deadline bounds it too. It must be shorter than the
	// gateway's IdempotencyLease.
	CallTimeout time.Duration
}

// Provider is who operates an upstream server.
type Provider struct {
	Name      string
	TrustTier string
}

// ToolConfig is the operator's word on an upstream tool. Nil fields and a
// zero Trust leave what comes before them (Server.Defaults) as it is.
type ToolConfig struct {
	// Enabled false removes the tool.
	Enabled *bool
	// Pricing nil: free.
	Pricing *registry.Pricing
	// Capabilities are merged field by field over the defaults'. None
	// declared leaves the tool's risk unknown: the upstream's annotations
	// are the provider's claims and never count.
	Capabilities *registry.Capabilities
	Trust        registry.Trust
}

// Value is a string the operator gives directly (Literal), or names where to
// read it from when a connection starts: an environment variable of the
// gateway (Env) or a file (File). Values read from the environment or a file
// are secrets: they are kept out of every log line and error, and out of
// the outputs of calls.
type Value struct {
	Literal string
	Env     string
	File    string
}

// String keeps a value out of anything that prints it.
func (v Value) String() string {
	switch {
	case v.Env != "":
		return "env:" + v.Env
	case v.File != "":
		return "file:" + v.File
	}
	return "[value]"
}

// GoString keeps a value out of %#v too.
func (v Value) GoString() string { return v.String() }

// Credential is what a URL server is sent with each request: a header, an
// optional scheme before the value ("Bearer"), and the value.
type Credential struct {
	Header string
	Scheme string
	Value  Value
}

// Options tune how upstream servers are run. A nil *Options, and every zero
// field, means the default.
type Options struct {
	// Logger receives what happens to each server, and the log messages
	// and progress its servers send; nil discards them. Inputs, outputs
	// and secrets are never logged.
	Logger *slog.Logger
	// Metrics, when set, gets toolgate_mcp_server_up{server}: 1 while a
	// server is connected and its tools listed, 0 otherwise.
	Metrics prometheus.Registerer
	// PinsFile is the pins file (see Pins). When set, every tool whose
	// digest is not pinned there is served but blocked; the file is read
	// again whenever it changes.
	PinsFile string
	// PinsPollInterval is how often PinsFile is checked for changes (2 s).
	PinsPollInterval time.Duration
	// StartTimeout bounds starting a server and listing its tools (30 s);
	// one that takes longer is down, its tools absent, and is tried again.
	StartTimeout time.Duration
	// StopTimeout is how long a stopped process has between SIGTERM and
	// SIGKILL (5 s).
	StopTimeout time.Duration
	// MinBackoff and MaxBackoff bound the wait before starting a server
	// again after it stopped or failed to start: it doubles from the first
	// to the second, and starts over once a server stayed up a minute.
	MinBackoff time.Duration
	MaxBackoff time.Duration
	// LookupEnv reads the gateway's environment; nil means os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// ReadFile reads files Values name; nil means os.ReadFile.
	ReadFile func(string) ([]byte, error)
}

func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.PinsPollInterval == 0 {
		o.PinsPollInterval = DefaultPinsPollInterval
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = DefaultStartTimeout
	}
	if o.StopTimeout == 0 {
		o.StopTimeout = DefaultStopTimeout
	}
	if o.MinBackoff == 0 {
		o.MinBackoff = DefaultMinBackoff
	}
	if o.MaxBackoff == 0 {
		o.MaxBackoff = DefaultMaxBackoff
	}
	if o.LookupEnv == nil {
		o.LookupEnv = os.LookupEnv
	}
	if o.ReadFile == nil {
		o.ReadFile = os.ReadFile
	}
	return o
}

func (o Options) validate() error {
	switch {
	case o.PinsPollInterval < 0 || o.StartTimeout < 0 || o.StopTimeout < 0:
		return errors.New("mcpupstream: durations in Options must be positive")
	case o.MinBackoff <= 0 || o.MaxBackoff < o.MinBackoff:
		return errors.New("mcpupstream: MinBackoff must be positive and at most MaxBackoff")
	}
	return nil
}

// ConfigError is a mistake in a Server, naming the field.
type ConfigError struct {
	Field string // such as servers[1].url
	Msg   string
}

func (e *ConfigError) Error() string { return "mcpupstream: " + e.Field + ": " + e.Msg }

// ValidID reports whether id can name a server.
func ValidID(id string) bool { return len(id) <= MaxIDLength && idPattern.MatchString(id) }

// validate checks servers before any is started.
func validate(servers []Server) error {
	seen := map[string]bool{}
	for i, s := range servers {
		at := func(field string) string { return fmt.Sprintf("servers[%d].%s", i, field) }
		bad := func(field, format string, args ...any) error {
			return &ConfigError{Field: at(field), Msg: fmt.Sprintf(format, args...)}
		}
		if !ValidID(s.ID) {
			return bad("id", "must be 1 to %d lowercase letters and digits, with single dashes between them", MaxIDLength)
		}
		if seen[s.ID] {
			return bad("id", "%q names two servers", s.ID)
		}
		seen[s.ID] = true
		ways := 0
		for _, set := range []bool{len(s.Command) > 0, s.URL != "", s.Transport != nil} {
			if set {
				ways++
			}
		}
		if ways != 1 {
			return bad("command", "give exactly one of command and url")
		}
		if len(s.Command) > 0 && strings.TrimSpace(s.Command[0]) == "" {
			return bad("command", "the first element must name the program")
		}
		if len(s.Env) > 0 && len(s.Command) == 0 {
			return bad("env", "applies only to a command")
		}
		for name := range s.Env {
			if name == "" || strings.ContainsAny(name, "=\x00") {
				return bad("env", "%q is not an environment variable's name", name)
			}
		}
		if s.URL != "" {
			if _, err := weburl.Check(s.URL, weburl.Allow{PortOnlyHost: true, Path: true, Query: true, EmptyFragment: true}); err != nil {
				return bad("url", "must be an http or https URL with a host, and no credentials or fragment")
			}
		}
		if s.Credential != nil {
			if s.URL == "" {
				return bad("credential", "applies only to a url")
			}
			if !httpguts.ValidHeaderFieldName(s.Credential.Header) {
				return bad("credential.header", "must be an HTTP header name")
			}
			if strings.ContainsAny(s.Credential.Scheme, " \t\r\n") {
				return bad("credential.scheme", "must be one word, such as Bearer")
			}
		}
		if err := validTokenExchange(&s, bad); err != nil {
			return err
		}
		for j, g := range s.Include {
			if _, err := path.Match(g, ""); err != nil {
				return bad(fmt.Sprintf("include[%d]", j), "%q is not a valid pattern", g)
			}
		}
		if s.CallTimeout < 0 {
			return bad("callTimeout", "must be positive")
		}
		if err := validPricing(s.Defaults.Pricing); err != nil {
			return bad("defaults.pricing", "%v", err)
		}
		for name, t := range s.Tools {
			if err := validPricing(t.Pricing); err != nil {
				return bad("tools."+name+".pricing", "%v", err)
			}
		}
	}
	return nil
}

func validPricing(p *registry.Pricing) error {
	switch {
	case p == nil:
		return nil
	case p.Type != registry.PricingFree && p.Type != registry.PricingPerCall:
		return fmt.Errorf("type %q is not free or per_call", p.Type)
	case p.Amount.IsNegative():
		return errors.New("the amount is negative")
	case registry.CheckPrice(p.Amount) != nil:
		return fmt.Errorf("the amount %v", registry.ErrPriceTooLarge)
	case p.Type == registry.PricingFree && !p.Amount.IsZero():
		return errors.New("a free tool has no amount")
	case p.Currency != "" && p.Currency != "USD":
		return fmt.Errorf("currency %q: only USD is supported", p.Currency)
	}
	return nil
}

// transportName is what a server's tools' manifests call its transport.
func (s *Server) transportName() string {
	switch {
	case len(s.Command) > 0:
		return registry.MCPTransportStdio
	case s.URL != "":
		return registry.MCPTransportHTTP
	case s.TransportName != "":
		return s.TransportName
	}
	return "custom"
}

// address is the command line or URL a server is reached at, as its
// tools' manifests show it.
func (s *Server) address() string {
	switch {
	case len(s.Command) > 0:
		parts := make([]string, len(s.Command))
		for i, a := range s.Command {
			parts[i] = a
			if a == "" || strings.ContainsAny(a, " \t\n\"'\\") {
				parts[i] = fmt.Sprintf("%q", a)
			}
		}
		return strings.Join(parts, " ")
	case s.URL != "":
		return s.URL
	}
	return s.Address
}

// origin is the origin of a URL server's tools; "" for the others, which
// are reached by their own means.
func (s *Server) origin() string {
	if s.URL == "" {
		return ""
	}
	u, err := url.Parse(s.URL)
	if err != nil {
		return ""
	}
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host)
}
