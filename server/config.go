package server

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
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
	"github.com/toolgate/toolgate/rules"
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
	// Rules are the organization's rules (section 29), each checked by
	// rules.Compile when the config is parsed (rules.go).
	Rules []rules.Rule

	// source is what the config was parsed from (configsource.go); zero
	// for a Config made in Go.
	source configSource
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
	return loadConfig(path, data)
}

// loadConfig is LoadConfig of data, read from the file at path.
func loadConfig(path string, data []byte) (*Config, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, &ConfigError{Msg: "cannot find the config file's directory: " + err.Error()}
	}
	dir := filepath.Dir(abs)
	cfg, err := parse(data, dir)
	if err != nil {
		return nil, err
	}
	cfg.source.path = abs
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
	var doc configJSON
	if err := decodeConfig(data, &doc); err != nil {
		return nil, err
	}
	reg, err := builtinRegistry(doc.BuiltinTools)
	if err != nil {
		return nil, err
	}
	tools, err := doc.loadToolManifests(dir, reg)
	if err != nil {
		return nil, err
	}
	cfg, err := doc.config(reg)
	if err != nil {
		return nil, err
	}
	cfg.Registry, cfg.Tools = reg, tools
	cfg.source = configSource{data: data, sum: sha256.Sum256(data)}
	return cfg, nil
}

// configJSON is the config file as encoding/json decodes it; config checks
// it and makes it a Config. A member given as null is absent.
type configJSON struct {
	Listen               *string               `json:"listen"`
	Storage              *string               `json:"storage"`
	QuoteTTL             *duration             `json:"quoteTTL"`
	MaxOpenQuotes        *count                `json:"maxOpenQuotes"`
	ApprovalTTL          *duration             `json:"approvalTTL"`
	IdempotencyLease     *duration             `json:"idempotencyLease"`
	UpstreamTimeout      *duration             `json:"upstreamTimeout"`
	FeeRate              *amount               `json:"feeRate"`
	ExposeUsageCounts    bool                  `json:"exposeUsageCounts"`
	BuiltinTools         *bool                 `json:"builtinTools"`
	Principals           []principalJSON       `json:"principals"`
	Upstreams            map[string]*string    `json:"upstreams"`
	Trust                map[string]*trustJSON `json:"trust"`
	Tools                []str                 `json:"tools"`
	Approvers            []approverJSON        `json:"approvers"`
	Approvals            *approvalsJSON        `json:"approvals"`
	MetricsListen        *string               `json:"metricsListen"`
	Retention            *duration             `json:"retention"`
	SynchronousAdmission *bool                 `json:"synchronousAdmission"`
	OAuth                *oauthJSON            `json:"oauth"`
	SealingKeys          []str                 `json:"sealingKeys"`
	Limits               *limitsConfigJSON     `json:"limits"`
	AllowedHosts         []str                 `json:"allowedHosts"`
	MCPServers           []mcpServerJSON       `json:"mcpServers"`
	Pins                 *string               `json:"pins"`
	Receipts             *receiptsJSON         `json:"receipts"`
	Budgets              []budgetJSON          `json:"budgets"`
	Webhooks             *webhooksJSON         `json:"webhooks"`
	Rules                []ruleJSON            `json:"rules"`
}

// builtinRegistry is the registry a config starts from, before its
// manifests: the built-in tools, or none when its "builtinTools" is false.
func builtinRegistry(builtins *bool) (*registry.Registry, error) {
	if builtins != nil && !*builtins {
		return registry.New(), nil
	}
	return newRegistry()
}

// config checks the decoded file and makes it a Config. Every tool it
// names must be in reg, the tools of its manifests included (parse loads
// them first). Errors are *ConfigError naming the field; no error ever
// quotes an API key or a database URL, since they end up in logs.
func (doc *configJSON) config(reg *registry.Registry) (*Config, error) {
	p := configParser{reg: reg, callerKeys: map[[sha256.Size]byte]string{}, mcpIDs: map[string]bool{}}
	for _, s := range doc.MCPServers {
		if s.ID != nil {
			p.mcpIDs[*s.ID] = true
		}
	}
	cfg := &Config{Listen: defaultListen, Storage: storageMemory, BuiltinTools: true}
	var err error
	if doc.Listen != nil {
		if cfg.Listen, err = checkListenAt("listen", *doc.Listen); err != nil {
			return nil, err
		}
	}
	if doc.Storage != nil {
		if cfg.Storage, err = checkStorage("storage", *doc.Storage); err != nil {
			return nil, err
		}
	}
	cfg.QuoteTTL = doc.QuoteTTL.value()
	if doc.MaxOpenQuotes != nil {
		if cfg.MaxOpenQuotes = int(*doc.MaxOpenQuotes); cfg.MaxOpenQuotes < 1 {
			return nil, errorf("maxOpenQuotes", "must be at least 1: every caller may hold some open quotes")
		}
	}
	cfg.ApprovalTTL = doc.ApprovalTTL.value()
	cfg.IdempotencyLease = doc.IdempotencyLease.value()
	cfg.UpstreamTimeout = doc.UpstreamTimeout.value()
	if doc.FeeRate != nil {
		if cfg.FeeRate, err = feeRate("feeRate", *doc.FeeRate); err != nil {
			return nil, err
		}
	}
	cfg.ExposeUsageCounts = doc.ExposeUsageCounts
	if doc.BuiltinTools != nil {
		cfg.BuiltinTools = *doc.BuiltinTools // applied by builtinRegistry, before the rest
	}
	if cfg.Principals, err = p.principals("principals", doc.Principals); err != nil {
		return nil, err
	}
	if cfg.Upstreams, err = p.upstreams("upstreams", doc.Upstreams); err != nil {
		return nil, err
	}
	if cfg.Trust, err = p.trust("trust", doc.Trust); err != nil {
		return nil, err
	}
	if cfg.Approvers, err = p.approvers("approvers", doc.Approvers); err != nil {
		return nil, err
	}
	if doc.Approvals != nil {
		if cfg.Approvals, err = doc.Approvals.approvals("approvals"); err != nil {
			return nil, err
		}
	}
	if doc.OAuth != nil {
		if cfg.OAuth, err = doc.OAuth.oauth("oauth"); err != nil {
			return nil, err
		}
	}
	if doc.MetricsListen != nil {
		if cfg.MetricsListen, err = checkListenAt("metricsListen", *doc.MetricsListen); err != nil {
			return nil, err
		}
	}
	if doc.SynchronousAdmission != nil {
		cfg.SynchronousAdmission = *doc.SynchronousAdmission
	}
	if doc.SealingKeys != nil {
		if cfg.SealingKeys, err = sealingKeys("sealingKeys", doc.SealingKeys); err != nil {
			return nil, err
		}
	}
	if doc.Limits != nil {
		if cfg.Limits, err = doc.Limits.limits("limits"); err != nil {
			return nil, err
		}
	}
	if cfg.AllowedHosts, err = allowedHosts("allowedHosts", doc.AllowedHosts); err != nil {
		return nil, err
	}
	if cfg.MCPServers, err = mcpServers("mcpServers", doc.MCPServers); err != nil {
		return nil, err
	}
	if doc.Receipts != nil {
		if cfg.Receipts, err = doc.Receipts.receipts("receipts"); err != nil {
			return nil, err
		}
	}
	if cfg.Budgets, err = p.budgets("budgets", doc.Budgets); err != nil {
		return nil, err
	}
	if doc.Webhooks != nil {
		if cfg.Webhooks, err = doc.Webhooks.webhooks("webhooks"); err != nil {
			return nil, err
		}
	}
	if cfg.Rules, err = p.rules("rules", doc.Rules, cfg.Approvers); err != nil {
		return nil, err
	}
	if doc.Pins != nil {
		if cfg.PinsFile = *doc.Pins; strings.TrimSpace(cfg.PinsFile) == "" {
			return nil, errorf("pins", `must be a file path such as "toolgate.pins.json" (relative to the config file)`)
		}
	}
	if cfg.Retention = doc.Retention.value(); doc.Retention != nil && cfg.Retention < minRetention {
		return nil, errorf("retention", "%s is shorter than the minimum of 24h: finished calls stay replayable for a day", cfg.Retention)
	}
	if err := checkLease(cfg, doc.IdempotencyLease != nil); err != nil {
		return nil, err
	}
	if doc.MCPServers != nil {
		if err := checkCallTimeouts(cfg, "mcpServers"); err != nil {
			return nil, err
		}
	}
	if doc.Pins != nil && len(cfg.MCPServers) == 0 {
		return nil, errorf("pins", "pins the tools of mcpServers, and there are none")
	}
	if cfg.SynchronousAdmission && cfg.StorageKind() != "postgres" {
		// Silently meaningless would let an operator believe in a guarantee.
		return nil, errorf("synchronousAdmission", "applies only to a PostgreSQL storage, not %s", cfg.StorageKind())
	}
	if err := checkPrincipals(cfg); err != nil {
		return nil, err
	}
	if err := checkPages(cfg); err != nil {
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
// run twice. The error names the lease when it was set, else the timeout.
func checkLease(cfg *Config, leaseSet bool) error {
	l, u := cfg.IdempotencyLease, cfg.upstreamTimeout()
	if l == 0 {
		l = toolgate.DefaultIdempotencyLease
	}
	if u < l {
		return nil
	}
	if leaseSet {
		return errorf("idempotencyLease", "%s must be longer than upstreamTimeout (%s), or a retry could take over a call still waiting on its upstream", l, u)
	}
	return errorf("upstreamTimeout", "%s must be shorter than idempotencyLease (%s), or a retry could take over a call still waiting on its upstream", u, l)
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

func checkListenAt(path, s string) (string, error) {
	if err := CheckListen(s); err != nil {
		return "", errorf(path, "%v", err)
	}
	return s, nil
}

func checkStorage(path, s string) (string, error) {
	if s == storageMemory {
		return s, nil
	}
	if file, ok := strings.CutPrefix(s, sqlitePrefix); ok {
		switch {
		case file == "":
			return "", errorf(path, `"sqlite:" must be followed by the database file's path (sqlite:/var/lib/toolgate/toolgate.db)`)
		case file == ":memory:" || strings.HasPrefix(file, "file:"):
			return "", errorf(path, `%q: after "sqlite:" comes a file path (for a store kept in memory, use "memory")`, s)
		}
		return s, nil
	}
	// A URL may carry a password, so it is never quoted back, nor is the
	// parser's error. The parser is pgx's own, so whatever the store will
	// accept (several hosts, say) passes here too.
	if !strings.HasPrefix(s, "postgres://") && !strings.HasPrefix(s, "postgresql://") {
		return "", errorf(path, `must be "memory", a PostgreSQL URL (postgres://user:password@host:5432/db) or "sqlite:" and a file path`)
	}
	if _, err := pgconn.ParseConfig(s); err != nil {
		return "", errorf(path, "is not a valid PostgreSQL URL (postgres://user:password@host:5432/db)")
	}
	return s, nil
}

func feeRate(path string, a amount) (*decimal.Decimal, error) {
	d := decimal.Decimal(a)
	if d.GreaterThan(decimal.NewFromInt(1)) {
		return nil, errorf(path, "%s must be from 0 to 1 (0.10 is a 10%% fee)", d)
	}
	return &d, nil
}

// principalJSON is an entry of "principals".
type principalJSON struct {
	ID            *text              `json:"id"`
	APIKeys       []str              `json:"apiKeys"`
	APIKeySha256  []str              `json:"apiKeySha256"`
	SpendControls *spendControlsJSON `json:"spendControls"`
	ApprovalMode  *string            `json:"approvalMode"`
}

func (p configParser) principals(path string, in []principalJSON) ([]Principal, error) {
	if in == nil {
		return nil, nil
	}
	out := make([]Principal, 0, len(in))
	owner := map[[sha256.Size]byte]string{} // key digest -> principal, across principals
	for i, item := range in {
		pr, err := p.principal(index(path, i), item, owner)
		if err != nil {
			return nil, err
		}
		for _, other := range out {
			if other.ID == pr.ID {
				return nil, errorf(at(index(path, i), "id"), "principal %q is given twice", pr.ID)
			}
		}
		out = append(out, pr)
	}
	return out, nil
}

func (p configParser) principal(path string, in principalJSON, owner map[[sha256.Size]byte]string) (Principal, error) {
	var pr Principal
	var err error
	if in.ID != nil {
		if pr.ID = string(*in.ID); pr.ID == "" || len(pr.ID) > maxPrincipalID {
			return Principal{}, errorf(at(path, "id"), "must be 1 to %d characters", maxPrincipalID)
		}
	}
	if in.SpendControls != nil {
		if pr.SpendControls, err = p.spendControls(at(path, "spendControls"), *in.SpendControls); err != nil {
			return Principal{}, err
		}
	}
	if in.ApprovalMode != nil {
		if pr.ApprovalMode, err = approvalMode(at(path, "approvalMode"), *in.ApprovalMode); err != nil {
			return Principal{}, err
		}
	}
	if pr.ID == "" {
		return Principal{}, errorf(path, "id is required")
	}
	claim := func(keyPath string, d [sha256.Size]byte) error {
		if other, taken := owner[d]; taken && other != pr.ID {
			return errorf(keyPath, "this key already belongs to principal %q", other)
		}
		owner[d] = pr.ID
		p.callerKeys[d] = keyPath
		return nil
	}
	for i, key := range strs(in.APIKeys) {
		keyPath := index(at(path, "apiKeys"), i)
		if !validKey(key) {
			return Principal{}, errorf(keyPath, "an API key must be 1 to %d visible ASCII characters (no spaces)", maxKeyLen)
		}
		if err := claim(keyPath, sha256.Sum256([]byte(key))); err != nil {
			return Principal{}, err
		}
		pr.APIKeys = append(pr.APIKeys, key)
	}
	for i, s := range strs(in.APIKeySha256) {
		keyPath := index(at(path, "apiKeySha256"), i)
		// Not quoted back: a key pasted here by mistake must not reach a log.
		d, ok := keyDigest(s)
		if !ok {
			return Principal{}, errorf(keyPath, "must be the SHA-256 of a key as 64 hex digits")
		}
		if err := claim(keyPath, d); err != nil {
			return Principal{}, err
		}
		pr.APIKeyDigests = append(pr.APIKeyDigests, d)
	}
	// A principal without keys calls with access tokens alone, which
	// checkPrincipals checks once the whole file is read.
	return pr, nil
}

// keyDigest reads the SHA-256 of a key, as 64 hex digits.
func keyDigest(s string) ([sha256.Size]byte, bool) {
	var d [sha256.Size]byte
	raw, err := hex.DecodeString(s)
	if err != nil || len(raw) != sha256.Size {
		return d, false
	}
	copy(d[:], raw)
	return d, true
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

// limitsJSON are the five limits global and per-tool spend controls share.
type limitsJSON struct {
	MaxPerCallUSD      *amount `json:"maxPerCallUsd"`
	DailyLimitUSD      *amount `json:"dailyLimitUsd"`
	MonthlyLimitUSD    *amount `json:"monthlyLimitUsd"`
	RateLimitPerMinute *count  `json:"rateLimitPerMinute"`
	RateLimitPerHour   *count  `json:"rateLimitPerHour"`
}

// spendControlsJSON is a principal's "spendControls".
type spendControlsJSON struct {
	Tools map[string]*toolControlsJSON `json:"tools"`
	limitsJSON
}

// toolControlsJSON is an entry of a principal's "spendControls.tools".
type toolControlsJSON struct {
	Allowed *bool `json:"allowed"`
	limitsJSON
}

func (p configParser) spendControls(path string, in spendControlsJSON) (toolgatetype.SpendControls, error) {
	c := toolgatetype.SpendControls{
		MaxPerCallUSD: in.MaxPerCallUSD.decimalPtr(), DailyLimitUSD: in.DailyLimitUSD.decimalPtr(), MonthlyLimitUSD: in.MonthlyLimitUSD.decimalPtr(),
		RateLimitPerMinute: in.RateLimitPerMinute.intPtr(), RateLimitPerHour: in.RateLimitPerHour.intPtr(),
	}
	if in.Tools == nil {
		return c, nil
	}
	path = at(path, "tools")
	c.Tools = make(map[string]toolgatetype.ToolSpendControls, len(in.Tools))
	for _, slug := range slices.Sorted(maps.Keys(in.Tools)) {
		t := in.Tools[slug]
		if t == nil {
			continue
		}
		if err := p.knownOrMCPTool(path, slug); err != nil {
			return toolgatetype.SpendControls{}, err
		}
		c.Tools[slug] = toolgatetype.ToolSpendControls{
			Allowed:       t.Allowed,
			MaxPerCallUSD: t.MaxPerCallUSD.decimalPtr(), DailyLimitUSD: t.DailyLimitUSD.decimalPtr(), MonthlyLimitUSD: t.MonthlyLimitUSD.decimalPtr(),
			RateLimitPerMinute: t.RateLimitPerMinute.intPtr(), RateLimitPerHour: t.RateLimitPerHour.intPtr(),
		}
	}
	return c, nil
}

// knownTool refuses a slug the registry does not hold, so a typo in a slug
// fails at start rather than silently configuring nothing. path is the
// object that names it.
func (p configParser) knownTool(path, slug string) error {
	if v, err := p.reg.Lookup(slug); err != nil || v.Tool.Slug != slug {
		return errorf(path, "no tool %q (the tools are %s)", slug, strings.Join(p.slugs(), ", "))
	}
	return nil
}

// knownOrMCPTool is knownTool, but also accepts the slug of a tool of a
// configured MCP server, which can only be checked once the server runs.
func (p configParser) knownOrMCPTool(path, slug string) error {
	if _, ok := p.mcpSlug(slug); ok {
		if !mcpupstream.ValidSlug(slug) {
			return errorf(path, "%q is not the slug of an MCP server's tool ({id}.{name}: lowercase letters, digits and dashes)", slug)
		}
		return nil
	}
	return p.knownTool(path, slug)
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

func (p configParser) upstreams(path string, in map[string]*string) (map[string]string, error) {
	if in == nil {
		return nil, nil
	}
	out := make(map[string]string, len(in))
	for _, slug := range slices.Sorted(maps.Keys(in)) {
		if in[slug] == nil {
			continue
		}
		if err := p.knownTool(path, slug); err != nil {
			return nil, err
		}
		origin, err := checkOrigin(at(path, slug), *in[slug])
		if err != nil {
			return nil, err
		}
		out[slug] = origin
	}
	return out, nil
}

// checkOrigin checks an origin of "upstreams", at path, and returns it
// without its trailing "/".
func checkOrigin(path, origin string) (string, error) {
	if !validOrigin(origin) {
		return "", errorf(path, "%q is not an origin: use scheme://host[:port] with http or https and no path", origin)
	}
	return strings.TrimSuffix(origin, "/"), nil
}

// validOrigin is the registry's rule for an origin: http or https, a host,
// nothing after it but an optional "/".
func validOrigin(origin string) bool {
	_, err := weburl.Check(origin, weburl.Allow{PortOnlyHost: true, EmptyFragment: true})
	return err == nil
}

func (p configParser) trust(path string, in map[string]*trustJSON) (map[string]registry.Trust, error) {
	if in == nil {
		return nil, nil
	}
	out := make(map[string]registry.Trust, len(in))
	for _, slug := range slices.Sorted(maps.Keys(in)) {
		if in[slug] == nil {
			continue
		}
		if err := p.knownOrMCPTool(path, slug); err != nil {
			return nil, err
		}
		out[slug] = in[slug].trust()
	}
	return out, nil
}
