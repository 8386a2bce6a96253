package server

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/net/http/httpguts"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/weburl"
	"github.com/toolgate/toolgate/mcpupstream"
	"github.com/toolgate/toolgate/registry"
)

// The config's "mcpServers": the MCP servers whose tools the gateway
// serves, each a command or a URL, with the operator's word on their tools.

// mcpServerIDs are the ids the config's mcpServers give, read before the
// rest of the config so that "trust" and per-tool spend controls may name
// the slugs of their tools, which exist only once the servers are running.
// Mistakes are left for mcpServers itself to report.
func mcpServerIDs(root node) map[string]bool {
	ids := map[string]bool{}
	fields, err := root.members()
	if err != nil {
		return ids
	}
	for _, f := range fields {
		if f.name != "mcpServers" {
			continue
		}
		items, err := f.items()
		if err != nil {
			return ids
		}
		for _, item := range items {
			fs, err := item.members()
			if err != nil {
				continue
			}
			for _, m := range fs {
				if m.name == "id" {
					if id, err := m.str(); err == nil {
						ids[id] = true
					}
				}
			}
		}
	}
	return ids
}

// mcpSlug reports whether slug is the slug of a tool of a configured MCP
// server, and which server.
func (p configParser) mcpSlug(slug string) (string, bool) {
	id, _, found := strings.Cut(slug, ".")
	return id, found && p.mcpIDs[id]
}

func (p configParser) mcpServers(n node) ([]mcpupstream.Server, error) {
	items, err := n.items()
	if err != nil {
		return nil, err
	}
	out := make([]mcpupstream.Server, 0, len(items))
	seen := map[string]bool{}
	for _, item := range items {
		s, err := p.mcpServer(item)
		if err != nil {
			return nil, err
		}
		if seen[s.ID] {
			return nil, item.child("id").errorf("%q names two servers", s.ID)
		}
		seen[s.ID] = true
		out = append(out, s)
	}
	return out, nil
}

func (p configParser) mcpServer(n node) (mcpupstream.Server, error) {
	fs, err := n.fields("id", "command", "env", "url", "credential", "provider", "defaults", "tools", "include", "callTimeout")
	if err != nil {
		return mcpupstream.Server{}, err
	}
	var s mcpupstream.Server
	var envField, credField *field
	for _, f := range fs {
		switch f.name {
		case "id":
			if s.ID, err = f.str(); err == nil && !mcpupstream.ValidID(s.ID) {
				err = f.errorf("%q must be 1 to %d lowercase letters and digits, with single dashes between them", s.ID, mcpupstream.MaxIDLength)
			}
		case "command":
			s.Command, err = commandLine(f.node)
		case "env":
			s.Env, err = mcpEnv(f.node)
			envField = &f
		case "url":
			s.URL, err = mcpURL(f.node)
		case "credential":
			s.Credential, err = mcpCredential(f.node)
			credField = &f
		case "provider":
			s.Provider, err = mcpProvider(f.node)
		case "defaults":
			s.Defaults, err = toolConfig(f.node, false)
		case "tools":
			s.Tools, err = toolConfigs(f.node)
		case "include":
			s.Include, err = includes(f.node)
		case "callTimeout":
			s.CallTimeout, err = f.duration()
		}
		if err != nil {
			return mcpupstream.Server{}, err
		}
	}
	switch {
	case s.ID == "":
		return s, n.errorf("id is required")
	case (len(s.Command) > 0) == (s.URL != ""):
		return s, n.errorf("give exactly one of command (a program the gateway starts) and url (a streamable HTTP server)")
	case envField != nil && s.URL != "":
		return s, envField.errorf("applies only to a command; a url's server gets a credential")
	case credField != nil && s.URL == "":
		return s, credField.errorf("applies only to a url: it is sent to the url's origin and nowhere else")
	}
	return s, nil
}

func commandLine(n node) ([]string, error) {
	items, err := n.items()
	if err != nil {
		return nil, n.errorf(`must be an array: the program and its arguments, such as ["npx", "-y", "@modelcontextprotocol/server-filesystem", "/srv/shared"]`)
	}
	if len(items) == 0 {
		return nil, n.errorf("must name the program to start")
	}
	out := make([]string, len(items))
	for i, item := range items {
		if out[i], err = item.str(); err != nil {
			return nil, err
		}
		if strings.ContainsRune(out[i], 0) {
			return nil, item.errorf("holds a NUL character")
		}
	}
	if strings.TrimSpace(out[0]) == "" {
		return nil, items[0].errorf("must name the program to start")
	}
	return out, nil
}

// value is a string, or {"env": NAME} or {"file": PATH} read at start.
func value(n node) (mcpupstream.Value, error) {
	if n.kind() == "a string" {
		s, err := n.str()
		return mcpupstream.Value{Literal: s}, err
	}
	if n.kind() != "an object" {
		return mcpupstream.Value{}, n.errorf(`must be a string, {"env": "NAME"} or {"file": "/path"}, not %s`, n.kind())
	}
	fs, err := n.fields("env", "file")
	if err != nil {
		return mcpupstream.Value{}, err
	}
	if len(fs) != 1 {
		return mcpupstream.Value{}, n.errorf(`give exactly one of env and file`)
	}
	s, err := fs[0].str()
	if err != nil {
		return mcpupstream.Value{}, err
	}
	if strings.TrimSpace(s) == "" {
		return mcpupstream.Value{}, fs[0].errorf("must not be empty")
	}
	if fs[0].name == "env" {
		return mcpupstream.Value{Env: s}, nil
	}
	return mcpupstream.Value{File: s}, nil
}

func mcpEnv(n node) (map[string]mcpupstream.Value, error) {
	fs, err := n.members()
	if err != nil {
		return nil, err
	}
	out := make(map[string]mcpupstream.Value, len(fs))
	for _, f := range fs {
		if f.name == "" || strings.ContainsAny(f.name, "=\x00") {
			return nil, n.errorf("%q is not an environment variable's name", f.name)
		}
		if out[f.name], err = value(f.node); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func mcpURL(n node) (string, error) {
	s, err := n.str()
	if err != nil {
		return "", err
	}
	if _, err := weburl.Check(s, weburl.Allow{PortOnlyHost: true, Path: true, Query: true, EmptyFragment: true}); err != nil {
		// Not quoted back: a URL with credentials would put them in a log.
		return "", n.errorf("must be an http or https URL with a host, and no credentials or fragment (a credential goes in \"credential\")")
	}
	return s, nil
}

func mcpCredential(n node) (*mcpupstream.Credential, error) {
	fs, err := n.fields("header", "scheme", "env", "file")
	if err != nil {
		return nil, err
	}
	c := &mcpupstream.Credential{}
	sources := 0
	for _, f := range fs {
		var s string
		if s, err = f.str(); err != nil {
			return nil, err
		}
		switch f.name {
		case "header":
			if !httpguts.ValidHeaderFieldName(s) {
				return nil, f.errorf("%q is not an HTTP header name", s)
			}
			c.Header = s
		case "scheme":
			if s == "" || strings.ContainsAny(s, " \t\r\n") {
				return nil, f.errorf("must be one word, such as Bearer")
			}
			c.Scheme = s
		case "env":
			c.Value.Env, sources = s, sources+1
		case "file":
			c.Value.File, sources = s, sources+1
		}
	}
	switch {
	case c.Header == "":
		return nil, n.errorf("header is required")
	case sources != 1:
		return nil, n.errorf("give exactly one of env and file: the credential's value is never written in the config")
	}
	return c, nil
}

func mcpProvider(n node) (mcpupstream.Provider, error) {
	fs, err := n.fields("name", "trustTier")
	if err != nil {
		return mcpupstream.Provider{}, err
	}
	var p mcpupstream.Provider
	for _, f := range fs {
		var s string
		if s, err = f.str(); err != nil {
			return p, err
		}
		if strings.TrimSpace(s) == "" {
			return p, f.errorf("must not be empty")
		}
		if f.name == "name" {
			p.Name = s
		} else {
			p.TrustTier = s
		}
	}
	return p, nil
}

func toolConfigs(n node) (map[string]mcpupstream.ToolConfig, error) {
	fs, err := n.members()
	if err != nil {
		return nil, err
	}
	out := make(map[string]mcpupstream.ToolConfig, len(fs))
	for _, f := range fs {
		if out[f.name], err = toolConfig(f.node, true); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// toolConfig is "defaults" (enabled not allowed) or one of "tools".
func toolConfig(n node, single bool) (mcpupstream.ToolConfig, error) {
	allowed := []string{"pricing", "capabilities", "trust"}
	if single {
		allowed = append(allowed, "enabled")
	}
	fs, err := n.fields(allowed...)
	if err != nil {
		return mcpupstream.ToolConfig{}, err
	}
	var c mcpupstream.ToolConfig
	for _, f := range fs {
		switch f.name {
		case "enabled":
			var b bool
			b, err = f.boolean()
			c.Enabled = &b
		case "pricing":
			c.Pricing, err = pricing(f.node)
		case "capabilities":
			c.Capabilities, err = capabilities(f.node)
		case "trust":
			c.Trust, err = trustOf(f.node)
		}
		if err != nil {
			return c, err
		}
	}
	return c, nil
}

func pricing(n node) (*registry.Pricing, error) {
	fs, err := n.fields("type", "amount", "currency")
	if err != nil {
		return nil, err
	}
	p := &registry.Pricing{Currency: "USD"}
	var amountField *field
	for _, f := range fs {
		switch f.name {
		case "type":
			if p.Type, err = f.str(); err == nil && p.Type != registry.PricingFree && p.Type != registry.PricingPerCall {
				err = f.errorf(`%q must be "free" or "per_call"`, p.Type)
			}
		case "amount":
			p.Amount, err = f.amount()
			amountField = &f
		case "currency":
			var cur string
			if cur, err = f.str(); err == nil && cur != "USD" {
				err = f.errorf("%q: only USD is supported", cur)
			}
		}
		if err != nil {
			return nil, err
		}
	}
	switch {
	case p.Type == "":
		return nil, n.errorf(`type is required: "free" or "per_call"`)
	case p.Type == registry.PricingFree && !p.Amount.IsZero():
		return nil, amountField.errorf("a free tool has no amount")
	case p.Type == registry.PricingPerCall && amountField == nil:
		return nil, n.errorf("amount is required for per_call")
	}
	return p, nil
}

// capabilityFlags are the capabilities given as true or false.
var capabilityFlags = []string{"readOnly", "destructive", "idempotent", "openWorld", "readsPrivateData",
	"seesUntrustedContent", "writesExternalData", "sendsMessages", "spendsMoney", "executesCode", "requiresUserCredential"}

func capabilities(n node) (*registry.Capabilities, error) {
	fs, err := n.fields(append([]string{"allowedOutboundDomains", "dataRetention"}, capabilityFlags...)...)
	if err != nil {
		return nil, err
	}
	c := &registry.Capabilities{}
	flags := map[string]**bool{
		"readOnly": &c.ReadOnly, "destructive": &c.Destructive, "idempotent": &c.Idempotent, "openWorld": &c.OpenWorld,
		"readsPrivateData": &c.ReadsPrivateData, "seesUntrustedContent": &c.SeesUntrustedContent,
		"writesExternalData": &c.WritesExternalData, "sendsMessages": &c.SendsMessages, "spendsMoney": &c.SpendsMoney,
		"executesCode": &c.ExecutesCode, "requiresUserCredential": &c.RequiresUserCredential,
	}
	for _, f := range fs {
		switch f.name {
		case "dataRetention":
			if c.DataRetention, err = f.str(); err == nil && c.DataRetention != registry.RetentionNone &&
				c.DataRetention != registry.RetentionStored && c.DataRetention != registry.RetentionUnknown {
				err = f.errorf(`%q must be "none", "stored" or "unknown"`, c.DataRetention)
			}
		case "allowedOutboundDomains":
			var items []node
			if items, err = f.items(); err == nil {
				c.AllowedOutboundDomains = []string{}
				for _, item := range items {
					var d string
					if d, err = item.str(); err != nil {
						break
					}
					c.AllowedOutboundDomains = append(c.AllowedOutboundDomains, d)
				}
			}
		default:
			var b bool
			if b, err = f.boolean(); err == nil {
				*flags[f.name] = &b
			}
		}
		if err != nil {
			return nil, err
		}
	}
	return c, nil
}

// trustOf reads a trust override, of a tool ("trust") or of an MCP
// server's tools: any of paymentVerified, endpointVerified and retrySafe.
func trustOf(n node) (registry.Trust, error) {
	fs, err := n.fields("paymentVerified", "endpointVerified", "retrySafe")
	if err != nil {
		return registry.Trust{}, err
	}
	var tr registry.Trust
	for _, f := range fs {
		b, err := f.boolean()
		if err != nil {
			return registry.Trust{}, err
		}
		switch f.name {
		case "paymentVerified":
			tr.PaymentVerified = &b
		case "endpointVerified":
			tr.EndpointVerified = &b
		case "retrySafe":
			tr.RetrySafe = &b
		}
	}
	return tr, nil
}

func includes(n node) ([]string, error) {
	items, err := n.items()
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(items))
	for _, item := range items {
		g, err := item.str()
		if err != nil {
			return nil, err
		}
		if _, err := path.Match(g, ""); err != nil {
			return nil, item.errorf("%q is not a valid pattern (globs over tool names, such as \"read_*\")", g)
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
		if len(s.Command) > 0 && strings.ContainsAny(s.Command[0], "/"+string(filepath.Separator)) {
			s.Command[0] = abs(s.Command[0])
		}
	}
}

// checkCallTimeouts requires each server's call timeout, given or default,
// to be shorter than the idempotency lease, given or default: a retry takes
// over a call whose lease has ended, and one still waiting on its server
// would then run twice.
func checkCallTimeouts(cfg *Config, servers node) error {
	lease := cfg.IdempotencyLease
	if lease == 0 {
		lease = toolgate.DefaultIdempotencyLease
	}
	items, _ := servers.items()
	for i, s := range cfg.MCPServers {
		timeout := s.CallTimeout
		if timeout == 0 {
			timeout = mcpupstream.DefaultCallTimeout
		}
		if timeout >= lease {
			at := servers
			if i < len(items) {
				at = items[i].child("callTimeout")
			}
			return at.errorf("%s must be shorter than idempotencyLease (%s), or a retry could take over a call still waiting on its server", timeout, lease)
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
