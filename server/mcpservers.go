package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	pathpkg "path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/net/http/httpguts"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/strictjson"
	"github.com/toolgate/toolgate/internal/weburl"
	"github.com/toolgate/toolgate/mcpupstream"
	"github.com/toolgate/toolgate/registry"
)

// The config's "mcpServers": the MCP servers whose tools the gateway
// serves, each a command or a URL, with the operator's word on their tools.

// mcpSlug reports whether slug is the slug of a tool of a configured MCP
// server, and which server. The servers' ids are read before the rest of
// the config, so that "trust" and per-tool spend controls may name the
// slugs of their tools, which exist only once the servers are running.
func (p configParser) mcpSlug(slug string) (string, bool) {
	id, _, found := strings.Cut(slug, ".")
	return id, found && p.mcpIDs[id]
}

// mcpServerJSON is an entry of "mcpServers".
type mcpServerJSON struct {
	ID          *string                 `json:"id"`
	Command     *commandLine            `json:"command"`
	Env         map[string]*mcpValue    `json:"env"`
	URL         *string                 `json:"url"`
	Credential  *credentialJSON         `json:"credential"`
	Auth        *upstreamAuthJSON       `json:"auth"`
	Provider    *providerJSON           `json:"provider"`
	Defaults    *toolDefaultsJSON       `json:"defaults"`
	Tools       map[string]*mcpToolJSON `json:"tools"`
	Include     []str                   `json:"include"`
	CallTimeout *duration               `json:"callTimeout"`
}

func mcpServers(path string, in []mcpServerJSON) ([]mcpupstream.Server, error) {
	if in == nil {
		return nil, nil
	}
	out := make([]mcpupstream.Server, 0, len(in))
	seen := map[string]bool{}
	for i, item := range in {
		s, err := item.server(index(path, i))
		if err != nil {
			return nil, err
		}
		if seen[s.ID] {
			return nil, errorf(at(index(path, i), "id"), "%q names two servers", s.ID)
		}
		seen[s.ID] = true
		out = append(out, s)
	}
	return out, nil
}

func (in *mcpServerJSON) server(path string) (mcpupstream.Server, error) {
	s := mcpupstream.Server{CallTimeout: in.CallTimeout.value()}
	var err error
	if in.ID != nil {
		if s.ID = *in.ID; !mcpupstream.ValidID(s.ID) {
			return s, errorf(at(path, "id"), "%q must be 1 to %d lowercase letters and digits, with single dashes between them", s.ID, mcpupstream.MaxIDLength)
		}
	}
	if in.Command != nil {
		s.Command = []string(*in.Command)
	}
	if in.Env != nil {
		if s.Env, err = mcpEnv(at(path, "env"), in.Env); err != nil {
			return s, err
		}
	}
	if in.URL != nil {
		if s.URL, err = mcpURL(at(path, "url"), *in.URL); err != nil {
			return s, err
		}
	}
	if in.Credential != nil {
		if s.Credential, err = in.Credential.credential(at(path, "credential")); err != nil {
			return s, err
		}
	}
	if in.Auth != nil {
		if s.TokenExchange, err = in.Auth.tokenExchange(at(path, "auth")); err != nil {
			return s, err
		}
	}
	if in.Provider != nil {
		if s.Provider, err = in.Provider.provider(at(path, "provider")); err != nil {
			return s, err
		}
	}
	if in.Defaults != nil {
		if s.Defaults, err = toolConfig(at(path, "defaults"), nil, in.Defaults.Pricing, in.Defaults.Capabilities, in.Defaults.Trust); err != nil {
			return s, err
		}
	}
	if in.Tools != nil {
		s.Tools = make(map[string]mcpupstream.ToolConfig, len(in.Tools))
		for _, name := range slices.Sorted(maps.Keys(in.Tools)) {
			t := in.Tools[name]
			if t == nil {
				continue
			}
			if s.Tools[name], err = toolConfig(at(at(path, "tools"), name), t.Enabled, t.Pricing, t.Capabilities, t.Trust); err != nil {
				return s, err
			}
		}
	}
	if s.Include, err = includes(at(path, "include"), in.Include); err != nil {
		return s, err
	}
	switch {
	case s.ID == "":
		return s, errorf(path, "id is required")
	case (len(s.Command) > 0) == (s.URL != ""):
		return s, errorf(path, "give exactly one of command (a program the gateway starts) and url (a streamable HTTP server)")
	case in.Env != nil && s.URL != "":
		return s, errorf(at(path, "env"), "applies only to a command; a url's server gets a credential")
	case in.Credential != nil && s.URL == "":
		return s, errorf(at(path, "credential"), "applies only to a url: it is sent to the url's origin and nowhere else")
	case s.TokenExchange != nil && s.URL == "":
		return s, errorf(at(at(path, "auth"), "tokenExchange"), "applies only to a url: a command's server cannot be sent a caller's token")
	}
	return s, nil
}

// commandLine is a server's "command": the program and its arguments.
type commandLine []string

func (c *commandLine) UnmarshalJSON(raw []byte) error {
	if kindOf(raw) != "an array" {
		return errors.New(`must be an array: the program and its arguments, such as ["npx", "-y", "@modelcontextprotocol/server-filesystem", "/srv/shared"]`)
	}
	var args []str
	if err := strictjson.Decode(raw, &args); err != nil {
		return err
	}
	if len(args) == 0 {
		return errors.New("must name the program to start")
	}
	for i, a := range args {
		if strings.ContainsRune(string(a), 0) {
			return errorf(index("", i), "holds a NUL character")
		}
	}
	if strings.TrimSpace(string(args[0])) == "" {
		return errorf("[0]", "must name the program to start")
	}
	*c = strs(args)
	return nil
}

// mcpValue is a string, or {"env": NAME} or {"file": PATH} read at start.
type mcpValue mcpupstream.Value

func (v *mcpValue) UnmarshalJSON(raw []byte) error {
	switch kindOf(raw) {
	case "a string":
		var s string
		err := json.Unmarshal(raw, &s)
		*v = mcpValue{Literal: s}
		return err
	case "an object":
	default:
		return fmt.Errorf(`must be a string, {"env": "NAME"} or {"file": "/path"}, not %s`, kindOf(raw))
	}
	var from struct {
		Env  *string `json:"env"`
		File *string `json:"file"`
	}
	if err := strictjson.Decode(raw, &from); err != nil {
		return err
	}
	if (from.Env == nil) == (from.File == nil) {
		return errors.New("give exactly one of env and file")
	}
	name, s := "env", from.Env
	if s == nil {
		name, s = "file", from.File
	}
	if strings.TrimSpace(*s) == "" {
		return errorf(name, "must not be empty")
	}
	*v = mcpValue{Env: *s}
	if name == "file" {
		*v = mcpValue{File: *s}
	}
	return nil
}

func mcpEnv(path string, in map[string]*mcpValue) (map[string]mcpupstream.Value, error) {
	out := make(map[string]mcpupstream.Value, len(in))
	for _, name := range slices.Sorted(maps.Keys(in)) {
		if name == "" || strings.ContainsAny(name, "=\x00") {
			return nil, errorf(path, "%q is not an environment variable's name", name)
		}
		if v := in[name]; v != nil {
			out[name] = mcpupstream.Value(*v)
		}
	}
	return out, nil
}

func mcpURL(path, s string) (string, error) {
	if _, err := weburl.Check(s, weburl.Allow{PortOnlyHost: true, Path: true, Query: true, EmptyFragment: true}); err != nil {
		// Not quoted back: a URL with credentials would put them in a log.
		return "", errorf(path, "must be an http or https URL with a host, and no credentials or fragment (a credential goes in \"credential\")")
	}
	return s, nil
}

// credentialJSON is a server's "credential".
type credentialJSON struct {
	Header *string `json:"header"`
	Scheme *string `json:"scheme"`
	Env    *string `json:"env"`
	File   *string `json:"file"`
}

func (in *credentialJSON) credential(path string) (*mcpupstream.Credential, error) {
	c := &mcpupstream.Credential{}
	if in.Header != nil {
		if c.Header = *in.Header; !httpguts.ValidHeaderFieldName(c.Header) {
			return nil, errorf(at(path, "header"), "%q is not an HTTP header name", c.Header)
		}
	}
	if in.Scheme != nil {
		if c.Scheme = *in.Scheme; c.Scheme == "" || strings.ContainsAny(c.Scheme, " \t\r\n") {
			return nil, errorf(at(path, "scheme"), "must be one word, such as Bearer")
		}
	}
	sources := 0
	if in.Env != nil {
		c.Value.Env, sources = *in.Env, sources+1
	}
	if in.File != nil {
		c.Value.File, sources = *in.File, sources+1
	}
	switch {
	case c.Header == "":
		return nil, errorf(path, "header is required")
	case sources != 1:
		return nil, errorf(path, "give exactly one of env and file: the credential's value is never written in the config")
	}
	return c, nil
}

// providerJSON is a server's "provider".
type providerJSON struct {
	Name      *string `json:"name"`
	TrustTier *string `json:"trustTier"`
}

func (in *providerJSON) provider(path string) (mcpupstream.Provider, error) {
	var p mcpupstream.Provider
	for _, f := range []struct {
		dst  *string
		src  *string
		name string
	}{{&p.Name, in.Name, "name"}, {&p.TrustTier, in.TrustTier, "trustTier"}} {
		if f.src == nil {
			continue
		}
		if *f.dst = *f.src; strings.TrimSpace(*f.dst) == "" {
			return p, errorf(at(path, f.name), "must not be empty")
		}
	}
	return p, nil
}

// toolDefaultsJSON is a server's "defaults": what its tools' entries say,
// but "enabled".
type toolDefaultsJSON struct {
	Pricing      *pricingJSON      `json:"pricing"`
	Capabilities *capabilitiesJSON `json:"capabilities"`
	Trust        *trustJSON        `json:"trust"`
}

// mcpToolJSON is an entry of a server's "tools".
type mcpToolJSON struct {
	Pricing      *pricingJSON      `json:"pricing"`
	Capabilities *capabilitiesJSON `json:"capabilities"`
	Trust        *trustJSON        `json:"trust"`
	Enabled      *bool             `json:"enabled"`
}

// toolConfig checks "defaults" or an entry of "tools".
func toolConfig(path string, enabled *bool, pricing *pricingJSON, caps *capabilitiesJSON, trust *trustJSON) (mcpupstream.ToolConfig, error) {
	c := mcpupstream.ToolConfig{Enabled: enabled}
	var err error
	if pricing != nil {
		if c.Pricing, err = pricing.pricing(at(path, "pricing")); err != nil {
			return c, err
		}
	}
	if caps != nil {
		if c.Capabilities, err = caps.capabilities(at(path, "capabilities")); err != nil {
			return c, err
		}
	}
	if trust != nil {
		c.Trust = trust.trust()
	}
	return c, nil
}

// pricingJSON is a tool's "pricing".
type pricingJSON struct {
	Type     *string `json:"type"`
	Amount   *amount `json:"amount"`
	Currency *string `json:"currency"`
}

func (in *pricingJSON) pricing(path string) (*registry.Pricing, error) {
	p := &registry.Pricing{Currency: "USD"}
	if in.Type != nil {
		if p.Type = *in.Type; p.Type != registry.PricingFree && p.Type != registry.PricingPerCall {
			return nil, errorf(at(path, "type"), `%q must be "free" or "per_call"`, p.Type)
		}
	}
	if d := in.Amount.decimalPtr(); d != nil {
		p.Amount = *d
	}
	if in.Currency != nil && *in.Currency != "USD" {
		return nil, errorf(at(path, "currency"), "%q: only USD is supported", *in.Currency)
	}
	switch {
	case p.Type == "":
		return nil, errorf(path, `type is required: "free" or "per_call"`)
	case p.Type == registry.PricingFree && !p.Amount.IsZero():
		return nil, errorf(at(path, "amount"), "a free tool has no amount")
	case p.Type == registry.PricingPerCall && in.Amount == nil:
		return nil, errorf(path, "amount is required for per_call")
	}
	return p, nil
}

// capabilitiesJSON is a tool's "capabilities".
type capabilitiesJSON struct {
	AllowedOutboundDomains []str   `json:"allowedOutboundDomains"`
	DataRetention          *string `json:"dataRetention"`
	ReadOnly               *bool   `json:"readOnly"`
	Destructive            *bool   `json:"destructive"`
	Idempotent             *bool   `json:"idempotent"`
	OpenWorld              *bool   `json:"openWorld"`
	ReadsPrivateData       *bool   `json:"readsPrivateData"`
	SeesUntrustedContent   *bool   `json:"seesUntrustedContent"`
	WritesExternalData     *bool   `json:"writesExternalData"`
	SendsMessages          *bool   `json:"sendsMessages"`
	SpendsMoney            *bool   `json:"spendsMoney"`
	ExecutesCode           *bool   `json:"executesCode"`
	RequiresUserCredential *bool   `json:"requiresUserCredential"`
}

func (in *capabilitiesJSON) capabilities(path string) (*registry.Capabilities, error) {
	c := &registry.Capabilities{
		AllowedOutboundDomains: strs(in.AllowedOutboundDomains),
		ReadOnly:               in.ReadOnly, Destructive: in.Destructive, Idempotent: in.Idempotent, OpenWorld: in.OpenWorld,
		ReadsPrivateData: in.ReadsPrivateData, SeesUntrustedContent: in.SeesUntrustedContent,
		WritesExternalData: in.WritesExternalData, SendsMessages: in.SendsMessages, SpendsMoney: in.SpendsMoney,
		ExecutesCode: in.ExecutesCode, RequiresUserCredential: in.RequiresUserCredential,
	}
	if in.DataRetention != nil {
		if c.DataRetention = *in.DataRetention; c.DataRetention != registry.RetentionNone &&
			c.DataRetention != registry.RetentionStored && c.DataRetention != registry.RetentionUnknown {
			return nil, errorf(at(path, "dataRetention"), `%q must be "none", "stored" or "unknown"`, c.DataRetention)
		}
	}
	return c, nil
}

// trustJSON is a trust override, of a tool ("trust") or of an MCP
// server's tools.
type trustJSON struct {
	PaymentVerified  *bool `json:"paymentVerified"`
	EndpointVerified *bool `json:"endpointVerified"`
	RetrySafe        *bool `json:"retrySafe"`
}

func (in *trustJSON) trust() registry.Trust {
	return registry.Trust{PaymentVerified: in.PaymentVerified, EndpointVerified: in.EndpointVerified, RetrySafe: in.RetrySafe}
}

func includes(path string, in []str) ([]string, error) {
	if in == nil {
		return nil, nil
	}
	out := make([]string, 0, len(in))
	for i, g := range strs(in) {
		if _, err := pathpkg.Match(g, ""); err != nil {
			return nil, errorf(index(path, i), "%q is not a valid pattern (globs over tool names, such as \"read_*\")", g)
		}
		out = append(out, g)
	}
	return out, nil
}

// resolveMCPPaths makes the file paths of the MCP servers' config, and the
// pins file, relative to dir (the config file's) when they are not
// absolute, as every path in the config is. A command's program is a path
// too when it names a directory ("bin/notes-server", "./server"), and is
// taken from dir likewise; a bare name ("npx") is looked up on PATH, and
// the arguments are the program's to read, from the gateway's working
// directory.
func resolveMCPPaths(cfg *Config, dir string) {
	abs := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
	cfg.PinsFile = abs(cfg.PinsFile)
	for i := range cfg.MCPServers {
		s := &cfg.MCPServers[i]
		for name, v := range s.Env {
			v.File = abs(v.File)
			s.Env[name] = v
		}
		if s.Credential != nil {
			s.Credential.Value.File = abs(s.Credential.Value.File)
		}
		if s.TokenExchange != nil {
			s.TokenExchange.ClientSecret.File = abs(s.TokenExchange.ClientSecret.File)
		}
		if len(s.Command) > 0 && strings.ContainsAny(s.Command[0], "/"+string(filepath.Separator)) {
			s.Command[0] = abs(s.Command[0])
		}
	}
}

// checkCallTimeouts requires each server's call timeout, given or default,
// to be shorter than the idempotency lease, given or default: a retry takes
// over a call whose lease has ended, and one still waiting on its server
// would then run twice.
func checkCallTimeouts(cfg *Config, path string) error {
	lease := cfg.IdempotencyLease
	if lease == 0 {
		lease = toolgate.DefaultIdempotencyLease
	}
	for i, s := range cfg.MCPServers {
		timeout := s.CallTimeout
		if timeout == 0 {
			timeout = mcpupstream.DefaultCallTimeout
		}
		if timeout >= lease {
			return errorf(at(index(path, i), "callTimeout"), "%s must be shorter than idempotencyLease (%s), or a retry could take over a call still waiting on its server", timeout, lease)
		}
	}
	return nil
}

// mcpServerOf is, for a slug of a configured MCP server's tool, the index
// of that server.
func (c *Config) mcpServerOf(slug string) (int, bool) {
	id, _, found := strings.Cut(slug, ".")
	if !found {
		return 0, false
	}
	for i, s := range c.MCPServers {
		if s.ID == id {
			return i, true
		}
	}
	return 0, false
}

// startMCPServers starts the config's MCP servers into reg; nil when there
// are none. A server that cannot start is logged, its tools absent, and the
// gateway serves on.
func startMCPServers(ctx context.Context, reg *registry.Registry, servers []mcpupstream.Server, pins string, tel *telemetry, log *slog.Logger) (*mcpupstream.Upstreams, error) {
	if len(servers) == 0 {
		return nil, nil
	}
	opts := &mcpupstream.Options{Logger: log, PinsFile: pins}
	// An interface holding a nil pointer would not be nil: set only when on.
	if tel.metrics != nil {
		opts.Metrics = tel.metrics
	}
	u, err := mcpupstream.Start(ctx, reg, servers, opts)
	if err != nil {
		return nil, fmt.Errorf("mcpServers: %w", err)
	}
	for _, st := range u.Status() {
		if !st.Up {
			log.Warn("an MCP server did not start; its tools are absent until it does", "mcpServer", st.ID, "error", st.Error)
		}
	}
	return u, nil
}

// healthz answers GET /healthz as the HTTP API does, 200 while the gateway
// serves, with each MCP server "up" or "down": a server that is down
// leaves the gateway healthy, and its tools absent or failing.
func healthz(u *mcpupstream.Upstreams) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		body, _ := json.Marshal(struct {
			Status     string            `json:"status"`
			MCPServers map[string]string `json:"mcpServers"`
		}{"ok", u.Health()})
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body)
	})
}

// MCPUpstreams is the config's MCP servers with the config's "trust" of
// their tools, by slug: what New starts, and what "toolgate mcp pin"
// inspects. The config itself is left as it is.
func (c *Config) MCPUpstreams() []mcpupstream.Server {
	servers := slices.Clone(c.MCPServers)
	for slug, t := range c.Trust {
		if i, ok := c.mcpServerOf(slug); ok {
			servers[i].Trust = maps.Clone(servers[i].Trust)
			if servers[i].Trust == nil {
				servers[i].Trust = map[string]registry.Trust{}
			}
			servers[i].Trust[slug] = t
		}
	}
	return servers
}
