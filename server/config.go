package server

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/shopspring/decimal"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/weburl"
	"github.com/toolgate/toolgate/mcpupstream"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/toolgatetype"
	"github.com/toolgate/toolgate/upstream"
)

// Defaults of the config file's fields.
const (
	defaultListen  = "127.0.0.1:8080"
	storageMemory  = "memory"
	maxPrincipalID = 255 // what the gateway accepts as a principal
	maxKeyLen      = 512 // what the HTTP API accepts as a bearer token
)

// sqlitePrefix starts a "storage" that names a SQLite file: "sqlite:" then
// its path.
const sqlitePrefix = "sqlite:"

// Config is the server's configuration file, parsed and checked by
// LoadConfig or ParseConfig. Zero fields mean the gateway's defaults.
type Config struct {
	// Registry holds the tools the config names: the built-in tools
	// unless BuiltinTools is false, and the manifests of Tools.
	// LoadConfig and ParseConfig fill it, checking every slug the config
	// names against it; New adds the MCP servers' tools and the config's
	// upstreams and trust to it. nil: New makes it from BuiltinTools and
	// Tools.
	Registry *registry.Registry

	Listen            string
	Storage           string // "memory", a PostgreSQL URL, or "sqlite:" and a file path
	QuoteTTL          time.Duration
	MaxOpenQuotes     int           // open quotes a principal may hold; 0: the gateway's 1,000
	ApprovalTTL       time.Duration // how long an approval request waits; 0: the gateway's 30 min
	FeeRate           *decimal.Decimal
	ExposeUsageCounts bool
	// BuiltinTools is whether the five built-in tools are served beside
	// the manifests' and the MCP servers' tools; LoadConfig leaves them
	// out of the registry when it is false.
	BuiltinTools bool
	Principals   []Principal
	Upstreams    map[string]string         // tool slug -> origin
	Trust        map[string]registry.Trust // tool slug -> override
	Tools        []string                  // tool manifest globs, absolute
	Approvers    []Approver                // the people who approve (approvers.go)
	Approvals    Approvals
	OAuth        *OAuth // nil: API keys only (oauth.go)

	// IdempotencyLease and UpstreamTimeout are the gateway's; the lease is
	// always longer, so that no call still waiting on its upstream is taken
	// over by a retry.
	IdempotencyLease time.Duration
	UpstreamTimeout  time.Duration
	MetricsListen    string        // "" serves no metrics
	Retention        time.Duration // how long executions are kept; 0: the gateway's 24 h
	// SynchronousAdmission is the PostgreSQL store's setting of that name:
	// each call's admission waits for the disk too.
	SynchronousAdmission bool
	// SealingKeys are the fleet's keys, the first sealing and every one
	// opening; none means one kept in the store (fleet.go).
	SealingKeys [][]byte
	// Limits are the limits on guessing and flooding (fleet.go).
	Limits Limits
	// AllowedHosts are the names /mcp answers to besides its own
	// (mcpconfig.go).
	AllowedHosts []string
	// MCPServers are the MCP servers whose tools the gateway serves
	// (mcpservers.go); PinsFile, when set, the file of their pinned
	// digests, absolute.
	MCPServers []mcpupstream.Server
	PinsFile   string
	// Receipts are the receipt signing keys (receipts.go); nil: a
	// development key generated at start.
	Receipts *Receipts
	// Budgets are the team and organization budgets (budgets.go), in the
	// file's order.
	Budgets []toolgatetype.BudgetDefinition
	// Webhooks tunes the delivery of events (section 28).
	Webhooks Webhooks
}

// minRetention is the shortest retention: every finished call stays
// replayable for at least a day.
const minRetention = 24 * time.Hour

// Principal is one caller: its API keys, in clear or as SHA-256 digests,
// and the operator's spend controls over it.
type Principal struct {
	ID            string
	APIKeys       []string
	APIKeyDigests [][sha256.Size]byte
	SpendControls toolgatetype.SpendControls
	// ApprovalMode is who approves the principal's calls: the caller
	// itself (the default) or its approvers.
	ApprovalMode toolgatetype.ApprovalMode
}

// StorageKind names the configured store, "memory", "postgres" or
// "sqlite", for logs: never the URL (it may hold a password) or the path.
func (c *Config) StorageKind() string {
	switch {
	case c.Storage == storageMemory || c.Storage == "":
		return "memory"
	case strings.HasPrefix(c.Storage, sqlitePrefix):
		return "sqlite"
	}
	return "postgres"
}

// postgres reports whether the config stores in PostgreSQL.
func (c *Config) postgres() bool { return c.StorageKind() == "postgres" }

// sqlitePath is the SQLite file's path, when the config stores in one.
func (c *Config) sqlitePath() string { return strings.TrimPrefix(c.Storage, sqlitePrefix) }

// LoadConfig reads and parses the config file at path, and makes the
// registry it describes (Config.Registry): the built-in tools unless its
// "builtinTools" is false, then the tool manifests its "tools" globs name.
// Every relative path in the file (the globs, a SQLite file, the pins
// file, the MCP servers' and the receipts' key files) is taken from the
// config file's directory, made absolute here once, so that every command
// finds the same files whatever directory it was started from and however
// path was given (absolute, or relative to that directory). Absolute paths
// stay as they are.
//
// A mistake in the file is a *ConfigError naming the field; a bad tool
// manifest a *registry.ManifestError naming its file. No error ever quotes
// an API key or a database URL, since they end up in logs.
func LoadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &ConfigError{Msg: "cannot read the config file: " + err.Error()}
	}
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return nil, &ConfigError{Msg: "cannot find the config file's directory: " + err.Error()}
	}
	cfg, err := parse(data, dir)
	if err != nil {
		return nil, err
	}
	resolveMCPPaths(cfg, dir)
	resolveReceiptPaths(cfg, dir)
	if cfg.StorageKind() == "sqlite" && !filepath.IsAbs(cfg.sqlitePath()) {
		cfg.Storage = sqlitePrefix + filepath.Join(dir, cfg.sqlitePath())
	}
	return cfg, nil
}

// ParseConfig parses a config that is not in a file, as LoadConfig does
// one that is, but for relative paths: its "tools" globs are taken from
// the working directory, and its other paths are left as they are, for
// the process to open from wherever it runs.
func ParseConfig(data []byte) (*Config, error) {
	dir, err := os.Getwd()
	if err != nil {
		return nil, &ConfigError{Msg: "cannot find the working directory: " + err.Error()}
	}
	return parse(data, dir)
}

// parse parses a config whose relative "tools" globs are taken from dir,
// an absolute directory. The registry is made first, and the manifests
// loaded into it, since the rest of the file may name their tools.
func parse(data []byte, dir string) (*Config, error) {
	reg, err := configRegistry(data)
	if err != nil {
		return nil, err
	}
	tools, err := loadToolManifests(data, dir, reg)
	if err != nil {
		return nil, err
	}
	cfg, err := parseConfig(data, reg)
	if err != nil {
		return nil, err
	}
	cfg.Registry, cfg.Tools = reg, tools
	return cfg, nil
}

// configRegistry is the registry a config starts from, before its
// manifests: the built-in tools, or none when its "builtinTools" is false.
// It is read first, since the rest of the file may name a built-in tool
// only when it is served.
func configRegistry(data []byte) (*registry.Registry, error) {
	root, err := parseDocument(data)
	if err != nil {
		return nil, err
	}
	fields, err := root.members()
	if err != nil {
		return nil, err
	}
	for _, f := range fields {
		if f.name != "builtinTools" {
			continue
		}
		builtins, err := f.boolean()
		if err != nil {
			return nil, err
		}
		if !builtins {
			return registry.New(), nil
		}
	}
	return newRegistry()
}

// parseConfig parses a config file. Every tool it names must be in reg,
// the tools of its manifests included (parse loads them first).
// Errors are *ConfigError naming the field; no error ever quotes an API
// key or a database URL, since they end up in logs.
func parseConfig(data []byte, reg *registry.Registry) (*Config, error) {
	root, err := parseDocument(data)
	if err != nil {
		return nil, err
	}
	fs, err := root.fields("listen", "storage", "quoteTTL", "maxOpenQuotes", "approvalTTL", "idempotencyLease", "upstreamTimeout", "feeRate",
		"exposeUsageCounts", "builtinTools", "principals", "upstreams", "trust", "tools", "approvers", "approvals",
		"metricsListen", "retention", "synchronousAdmission", "oauth", "sealingKeys", "limits", "allowedHosts", "mcpServers", "pins", "receipts", "budgets", "webhooks")
	if err != nil {
		return nil, err
	}
	p := configParser{reg: reg, callerKeys: map[[sha256.Size]byte]string{}, mcpIDs: mcpServerIDs(root)}
	cfg := &Config{Listen: defaultListen, Storage: storageMemory, BuiltinTools: true}
	var leaseField, upstreamField *field // for the check across the two
	var syncAdmissionField *field        // checked against the storage
	var mcpField, pinsField *field       // checked against each other and the lease
	for _, f := range fs {
		switch f.name {
		case "listen":
			cfg.Listen, err = p.listen(f.node)
		case "storage":
			cfg.Storage, err = p.storage(f.node)
		case "quoteTTL":
			cfg.QuoteTTL, err = f.duration()
		case "maxOpenQuotes":
			if cfg.MaxOpenQuotes, err = f.count(); err == nil && cfg.MaxOpenQuotes < 1 {
				err = f.errorf("must be at least 1: every caller may hold some open quotes")
			}
		case "approvalTTL":
			cfg.ApprovalTTL, err = f.duration()
		case "idempotencyLease":
			cfg.IdempotencyLease, err = f.duration()
			leaseField = &f
		case "upstreamTimeout":
			cfg.UpstreamTimeout, err = f.duration()
			upstreamField = &f
		case "feeRate":
			cfg.FeeRate, err = p.feeRate(f.node)
		case "exposeUsageCounts":
			cfg.ExposeUsageCounts, err = f.boolean()
		case "builtinTools":
			cfg.BuiltinTools, err = f.boolean() // applied by configRegistry, before the rest
		case "principals":
			cfg.Principals, err = p.principals(f.node)
		case "upstreams":
			cfg.Upstreams, err = p.upstreams(f.node)
		case "trust":
			cfg.Trust, err = p.trust(f.node)
		case "tools":
			_, err = f.items() // loaded by loadToolManifests, which knows the file's directory
		case "approvers":
			cfg.Approvers, err = p.approvers(f.node)
		case "approvals":
			cfg.Approvals, err = p.approvals(f.node)
		case "oauth":
			cfg.OAuth, err = p.oauth(f.node)
		case "metricsListen":
			cfg.MetricsListen, err = p.listen(f.node)
		case "synchronousAdmission":
			cfg.SynchronousAdmission, err = f.boolean()
			syncAdmissionField = &f
		case "sealingKeys":
			cfg.SealingKeys, err = p.sealingKeys(f.node)
		case "limits":
			cfg.Limits, err = p.limits(f.node)
		case "allowedHosts":
			cfg.AllowedHosts, err = p.allowedHosts(f.node)
		case "mcpServers":
			cfg.MCPServers, err = p.mcpServers(f.node)
			mcpField = &f
		case "receipts":
			cfg.Receipts, err = p.receipts(f.node)
		case "budgets":
			cfg.Budgets, err = p.budgets(f.node)
		case "webhooks":
			cfg.Webhooks, err = p.webhooks(f.node)
		case "pins":
			if cfg.PinsFile, err = f.str(); err == nil && strings.TrimSpace(cfg.PinsFile) == "" {
				err = f.errorf(`must be a file path such as "toolgate.pins.json" (relative to the config file)`)
			}
			pinsField = &f
		case "retention":
			if cfg.Retention, err = f.duration(); err == nil && cfg.Retention < minRetention {
				err = f.errorf("%s is shorter than the minimum of 24h: finished calls stay replayable for a day", cfg.Retention)
			}
		}
		if err != nil {
			return nil, err
		}
	}
	if err := checkLease(cfg, leaseField, upstreamField); err != nil {
		return nil, err
	}
	if mcpField != nil {
		if err := checkCallTimeouts(cfg, mcpField.node); err != nil {
			return nil, err
		}
	}
	if pinsField != nil && len(cfg.MCPServers) == 0 {
		return nil, pinsField.errorf("pins the tools of mcpServers, and there are none")
	}
	if syncAdmissionField != nil && cfg.SynchronousAdmission && cfg.StorageKind() != "postgres" {
		// Silently meaningless would let an operator believe in a guarantee.
		return nil, syncAdmissionField.errorf("applies only to a PostgreSQL storage, not %s", cfg.StorageKind())
	}
	if err := checkPrincipals(cfg); err != nil {
		return nil, err
	}
	if err := p.checkApprovers(cfg); err != nil {
		return nil, err
	}
	if err := checkBudgets(cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

// upstreamTimeout is the gateway's upstream deadline: the configured one,
// or its default.
func (c *Config) upstreamTimeout() time.Duration {
	if c.UpstreamTimeout == 0 {
		return upstream.DefaultTimeout
	}
	return c.UpstreamTimeout
}

// checkLease requires the idempotency lease, given or default, to be longer
// than the upstream timeout, given or default: a retry takes over a call
// whose lease has ended, and one still waiting on its upstream would then
// run twice. The error names the field that was set.
func checkLease(cfg *Config, lease, upstream *field) error {
	l, u := cfg.IdempotencyLease, cfg.upstreamTimeout()
	if l == 0 {
		l = toolgate.DefaultIdempotencyLease
	}
	if u < l {
		return nil
	}
	if lease != nil {
		return lease.errorf("%s must be longer than upstreamTimeout (%s), or a retry could take over a call still waiting on its upstream", l, u)
	}
	return upstream.errorf("%s must be shorter than idempotencyLease (%s), or a retry could take over a call still waiting on its upstream", u, l)
}

type configParser struct {
	reg *registry.Registry
	// callerKeys maps the digest of every principal's key to where the
	// file gives it, so that an approver key reusing one names both places.
	callerKeys map[[sha256.Size]byte]string
	// mcpIDs are the ids of the config's MCP servers, whose tools' slugs
	// ("{id}.{name}") may be named before the servers run.
	mcpIDs map[string]bool
}

// CheckListen accepts host:port with a numeric port, as the config's
// listen and metricsListen take them; an empty host listens
// on every interface.
func CheckListen(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not a host:port address", addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("%q has no port number from 0 to 65535", addr)
	}
	return nil
}

func (configParser) listen(n node) (string, error) {
	s, err := n.str()
	if err != nil {
		return "", err
	}
	if err := CheckListen(s); err != nil {
		return "", n.errorf("%v", err)
	}
	return s, nil
}

func (configParser) storage(n node) (string, error) {
	s, err := n.str()
	if err != nil {
		return "", err
	}
	if s == storageMemory {
		return s, nil
	}
	if path, ok := strings.CutPrefix(s, sqlitePrefix); ok {
		switch {
		case path == "":
			return "", n.errorf(`"sqlite:" must be followed by the database file's path (sqlite:/var/lib/toolgate/toolgate.db)`)
		case path == ":memory:" || strings.HasPrefix(path, "file:"):
			return "", n.errorf(`%q: after "sqlite:" comes a file path (for a store kept in memory, use "memory")`, s)
		}
		return s, nil
	}
	// A URL may carry a password, so it is never quoted back, nor is the
	// parser's error. The parser is pgx's own, so whatever the store will
	// accept (several hosts, say) passes here too.
	if !strings.HasPrefix(s, "postgres://") && !strings.HasPrefix(s, "postgresql://") {
		return "", n.errorf(`must be "memory", a PostgreSQL URL (postgres://user:password@host:5432/db) or "sqlite:" and a file path`)
	}
	if _, err := pgconn.ParseConfig(s); err != nil {
		return "", n.errorf("is not a valid PostgreSQL URL (postgres://user:password@host:5432/db)")
	}
	return s, nil
}

func (configParser) feeRate(n node) (*decimal.Decimal, error) {
	d, err := n.amount()
	if err != nil {
		return nil, err
	}
	if d.GreaterThan(decimal.NewFromInt(1)) {
		return nil, n.errorf("%s must be from 0 to 1 (0.10 is a 10%% fee)", d)
	}
	return &d, nil
}

func (p configParser) principals(n node) ([]Principal, error) {
	items, err := n.items()
	if err != nil {
		return nil, err
	}
	out := make([]Principal, 0, len(items))
	owner := map[[sha256.Size]byte]string{} // key digest -> principal, across principals
	for _, item := range items {
		pr, err := p.principal(item, owner)
		if err != nil {
			return nil, err
		}
		for _, other := range out {
			if other.ID == pr.ID {
				return nil, item.child("id").errorf("principal %q is given twice", pr.ID)
			}
		}
		out = append(out, pr)
	}
	return out, nil
}

func (p configParser) principal(n node, owner map[[sha256.Size]byte]string) (Principal, error) {
	fs, err := n.fields("id", "apiKeys", "apiKeySha256", "spendControls", "approvalMode")
	if err != nil {
		return Principal{}, err
	}
	var pr Principal
	var keys, digests []node // checked once the id is known, to name it in clashes
	for _, f := range fs {
		switch f.name {
		case "id":
			if pr.ID, err = f.text(); err == nil && (pr.ID == "" || len(pr.ID) > maxPrincipalID) {
				err = f.errorf("must be 1 to %d characters", maxPrincipalID)
			}
		case "apiKeys":
			keys, err = f.items()
		case "apiKeySha256":
			digests, err = f.items()
		case "spendControls":
			pr.SpendControls, err = p.spendControls(f.node)
		case "approvalMode":
			pr.ApprovalMode, err = approvalMode(f.node)
		}
		if err != nil {
			return Principal{}, err
		}
	}
	if pr.ID == "" {
		return Principal{}, n.errorf("id is required")
	}
	claim := func(k node, d [sha256.Size]byte) error {
		if other, taken := owner[d]; taken && other != pr.ID {
			return k.errorf("this key already belongs to principal %q", other)
		}
		owner[d] = pr.ID
		p.callerKeys[d] = k.path
		return nil
	}
	for _, k := range keys {
		key, err := k.str()
		if err != nil {
			return Principal{}, err
		}
		if !validKey(key) {
			return Principal{}, k.errorf("an API key must be 1 to %d visible ASCII characters (no spaces)", maxKeyLen)
		}
		if err := claim(k, sha256.Sum256([]byte(key))); err != nil {
			return Principal{}, err
		}
		pr.APIKeys = append(pr.APIKeys, key)
	}
	for _, k := range digests {
		s, err := k.str()
		if err != nil {
			return Principal{}, err
		}
		// Not quoted back: a key pasted here by mistake must not reach a log.
		raw, err := hex.DecodeString(s)
		if err != nil || len(raw) != sha256.Size {
			return Principal{}, k.errorf("must be the SHA-256 of a key as 64 hex digits")
		}
		var d [sha256.Size]byte
		copy(d[:], raw)
		if err := claim(k, d); err != nil {
			return Principal{}, err
		}
		pr.APIKeyDigests = append(pr.APIKeyDigests, d)
	}
	// A principal without keys calls with access tokens alone, which
	// checkPrincipals checks once the whole file is read.
	return pr, nil
}

// validKey matches what the HTTP API accepts as a bearer token, so a key
// that could never authenticate is refused at start, not at the first call.
func validKey(key string) bool {
	if key == "" || len(key) > maxKeyLen {
		return false
	}
	for i := 0; i < len(key); i++ {
		if key[i] <= ' ' || key[i] > '~' {
			return false
		}
	}
	return true
}

// limitFields are the five fields global and per-tool spend controls share.
var limitFields = []string{"maxPerCallUsd", "dailyLimitUsd", "monthlyLimitUsd", "rateLimitPerMinute", "rateLimitPerHour"}

// limits collects limitFields before they go into the storage types.
type limits struct {
	maxPerCall, daily, monthly *decimal.Decimal
	perMinute, perHour         *int
}

func (l *limits) set(f field) error {
	amount := func(dst **decimal.Decimal) error {
		d, err := f.amount()
		*dst = &d
		return err
	}
	count := func(dst **int) error {
		n, err := f.count()
		*dst = &n
		return err
	}
	switch f.name {
	case "maxPerCallUsd":
		return amount(&l.maxPerCall)
	case "dailyLimitUsd":
		return amount(&l.daily)
	case "monthlyLimitUsd":
		return amount(&l.monthly)
	case "rateLimitPerMinute":
		return count(&l.perMinute)
	case "rateLimitPerHour":
		return count(&l.perHour)
	}
	return nil
}

func (p configParser) spendControls(n node) (toolgatetype.SpendControls, error) {
	fs, err := n.fields(append([]string{"tools"}, limitFields...)...)
	if err != nil {
		return toolgatetype.SpendControls{}, err
	}
	var c toolgatetype.SpendControls
	var l limits
	for _, f := range fs {
		if f.name == "tools" {
			c.Tools, err = p.toolControls(f.node)
		} else {
			err = l.set(f)
		}
		if err != nil {
			return toolgatetype.SpendControls{}, err
		}
	}
	c.MaxPerCallUSD, c.DailyLimitUSD, c.MonthlyLimitUSD = l.maxPerCall, l.daily, l.monthly
	c.RateLimitPerMinute, c.RateLimitPerHour = l.perMinute, l.perHour
	return c, nil
}

func (p configParser) toolControls(n node) (map[string]toolgatetype.ToolSpendControls, error) {
	tools, err := n.members()
	if err != nil {
		return nil, err
	}
	out := make(map[string]toolgatetype.ToolSpendControls, len(tools))
	for _, t := range tools {
		if err := p.knownOrMCPTool(n, t.name); err != nil {
			return nil, err
		}
		fs, err := t.fields(append([]string{"allowed"}, limitFields...)...)
		if err != nil {
			return nil, err
		}
		var c toolgatetype.ToolSpendControls
		var l limits
		for _, f := range fs {
			if f.name == "allowed" {
				var b bool
				b, err = f.boolean()
				c.Allowed = &b
			} else {
				err = l.set(f)
			}
			if err != nil {
				return nil, err
			}
		}
		c.MaxPerCallUSD, c.DailyLimitUSD, c.MonthlyLimitUSD = l.maxPerCall, l.daily, l.monthly
		c.RateLimitPerMinute, c.RateLimitPerHour = l.perMinute, l.perHour
		out[t.name] = c
	}
	return out, nil
}

// knownTool refuses a slug the registry does not hold, so a typo in a slug
// fails at start rather than silently configuring nothing.
func (p configParser) knownTool(in node, slug string) error {
	if v, err := p.reg.Lookup(slug); err != nil || v.Tool.Slug != slug {
		return in.errorf("no tool %q (the tools are %s)", slug, strings.Join(p.slugs(), ", "))
	}
	return nil
}

// knownOrMCPTool is knownTool, but also accepts the slug of a tool of a
// configured MCP server, which can only be checked once the server runs.
func (p configParser) knownOrMCPTool(in node, slug string) error {
	if _, ok := p.mcpSlug(slug); ok {
		if !mcpupstream.ValidSlug(slug) {
			return in.errorf("%q is not the slug of an MCP server's tool ({id}.{name}: lowercase letters, digits and dashes)", slug)
		}
		return nil
	}
	return p.knownTool(in, slug)
}

func (p configParser) slugs() []string {
	vs, _ := p.reg.List("", 1000, 0)
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.Tool.Slug
	}
	slices.Sort(out)
	return out
}

func (p configParser) upstreams(n node) (map[string]string, error) {
	fs, err := n.members()
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(fs))
	for _, f := range fs {
		if err := p.knownTool(n, f.name); err != nil {
			return nil, err
		}
		origin, err := f.str()
		if err != nil {
			return nil, err
		}
		if !validOrigin(origin) {
			return nil, f.errorf("%q is not an origin: use scheme://host[:port] with http or https and no path", origin)
		}
		out[f.name] = strings.TrimSuffix(origin, "/")
	}
	return out, nil
}

// validOrigin is the registry's rule for an origin: http or https, a host,
// nothing after it but an optional "/".
func validOrigin(origin string) bool {
	_, err := weburl.Check(origin, weburl.Allow{PortOnlyHost: true, EmptyFragment: true})
	return err == nil
}

func (p configParser) trust(n node) (map[string]registry.Trust, error) {
	tools, err := n.members()
	if err != nil {
		return nil, err
	}
	out := make(map[string]registry.Trust, len(tools))
	for _, t := range tools {
		if err := p.knownOrMCPTool(n, t.name); err != nil {
			return nil, err
		}
		tr, err := trustOf(t.node)
		if err != nil {
			return nil, err
		}
		out[t.name] = tr
	}
	return out, nil
}
