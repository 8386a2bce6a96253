package server

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/apikey"
	"github.com/toolgate/toolgate/httpapi"
	"github.com/toolgate/toolgate/mcpserver"
	"github.com/toolgate/toolgate/oauth"
	"github.com/toolgate/toolgate/outbox"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/storage/memory"
	"github.com/toolgate/toolgate/storage/postgres"
	"github.com/toolgate/toolgate/storage/sqlite"
	"github.com/toolgate/toolgate/toolgatehttp"
	"github.com/toolgate/toolgate/toolgatetype"
	"github.com/toolgate/toolgate/tools"
	"github.com/toolgate/toolgate/tools/recorded"
	"github.com/toolgate/toolgate/upstream"
	"github.com/toolgate/toolgate/webhook"
)

// storeOpenTimeout bounds connecting to PostgreSQL, or opening a SQLite
// file another process may hold locked, and migrating the schema at start,
// so a store that does not answer fails the start visibly.
const storeOpenTimeout = 30 * time.Second

// offlineTrusted is the tool whose provider -offline answers itself, and
// so trusts: goal-data's demo provider.
const offlineTrusted = "goal-data"

// webhookDrain bounds how long a stopping server waits for the event
// deliveries in progress to be recorded.
const webhookDrain = 5 * time.Second

// newRegistry returns a registry of the built-in tools. The server keeps its
// own rather than registry.Default, so nothing else in the process can
// change what it serves.
func newRegistry() (*registry.Registry, error) {
	reg := registry.New()
	if err := tools.RegisterAll(reg); err != nil {
		return nil, err
	}
	return reg, nil
}

// New starts the server cfg describes (LoadConfig, ParseConfig, or one
// made in Go): it opens the store (creating or migrating a database's
// schema), sets up telemetry, the webhook sender and the fleet's shared
// state, starts the config's MCP servers (each has up to 30 s; one that
// cannot start is logged, its tools absent) and the pruning of expired
// records, and assembles the handler. ctx bounds the start, and the
// background fetch of the identity provider's keys. New applies the
// config's upstreams and trust to cfg.Registry (made when nil), which it
// shares: two servers of one Config share one registry. nil opts are the
// zero Options. Close the server to release what it holds.
func New(ctx context.Context, cfg *Config, opts *Options) (*Server, error) {
	if opts == nil {
		opts = &Options{}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.Registry == nil {
		reg, err := cfg.registry()
		if err != nil {
			return nil, err
		}
		cfg.Registry = reg
	}
	tel, err := newTelemetry(ctx, cfg, opts.getenv())
	if err != nil {
		return nil, fmt.Errorf("cannot start tracing: %w", err)
	}
	s, err := assemble(ctx, cfg, opts.Offline, tel, log)
	if err != nil {
		tel.close(log)
		return nil, err
	}
	s.startWatch(opts.ConfigPollInterval)
	retention, stop := context.WithCancel(context.Background())
	s.stopRetention, s.retentionDone = stop, make(chan struct{})
	go func() {
		defer close(s.retentionDone)
		s.gw.RunRetention(retention, RetentionInterval)
	}()
	return s, nil
}

// assemble applies cfg to its registry and assembles the gateway over the
// configured store, and the handler over the gateway.
func assemble(ctx context.Context, cfg *Config, offline bool, tel *telemetry, log *slog.Logger) (*Server, error) {
	reg := cfg.Registry
	if _, err := reg.Lookup(offlineTrusted); offline && err == nil { // not served without the built-in tools
		if err := reg.SetTrust(offlineTrusted, registry.Trust{PaymentVerified: registry.Bool(true), EndpointVerified: registry.Bool(true)}); err != nil {
			return nil, fmt.Errorf("trust %s offline: %w", offlineTrusted, err)
		}
	}
	// The config was checked against reg, so these only fail on a bug.
	for slug, origin := range cfg.Upstreams {
		if err := reg.SetOrigin(slug, origin); err != nil {
			return nil, fmt.Errorf("upstreams.%s: %w", slug, err)
		}
	}
	for slug, t := range cfg.Trust {
		if _, ok := cfg.mcpServerOf(slug); ok {
			continue // its tools are registered once the server runs, with this (MCPUpstreams)
		}
		if err := reg.SetTrust(slug, t); err != nil {
			return nil, fmt.Errorf("trust.%s: %w", slug, err)
		}
	}

	acc, err := newAccess(cfg.Principals, cfg.Approvers)
	if err != nil {
		return nil, err
	}
	keys := &liveAccess{}
	keys.cur.Store(acc)
	controls := toolgatetype.StaticSpendControls{}
	for _, p := range cfg.Principals {
		if p.ID != PrincipalTemplate {
			controls[p.ID] = p.SpendControls
		}
	}
	var spendControls toolgatetype.SpendControlsSource = controls
	if t := cfg.template(); t != nil {
		spendControls = templateControls{controls: controls, template: t.SpendControls}
	}
	sender, listening, err := newWebhook(cfg.Approvals, log)
	if err != nil {
		return nil, err
	}

	receiptKeys, generatedReceiptKey, err := receiptKeys(cfg.Receipts)
	if err != nil {
		return nil, err
	}
	store, closeStore, err := OpenStore(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	closeAll := closeStore
	gcfg := &toolgate.Config{
		Registry:             reg,
		FeeRate:              cfg.FeeRate,
		QuoteTTL:             cfg.QuoteTTL,
		MaxOpenQuotes:        cfg.MaxOpenQuotes,
		ApprovalTTL:          cfg.ApprovalTTL,
		IdempotencyLease:     cfg.IdempotencyLease,
		IdempotencyRetention: cfg.Retention,
		Upstream:             &upstream.Config{Timeout: cfg.UpstreamTimeout},
		SpendControls:        spendControls,
		Approvers:            keys,
		ApprovalRequestLimit: toolgatetype.RequestLimit{Max: cfg.Limits.ApprovalRequests, Window: cfg.Limits.ApprovalRequestWindow},
		Logger:               log,
		Receipts:             receiptKeys,
		Budgets:              budgetDefinitions(cfg),
		Rules:                cfg.Rules,
	}
	// Interfaces holding nil pointers would not be nil: set only what is on.
	if tel.metrics != nil {
		gcfg.Metrics = tel.metrics
	}
	if tel.tracing != nil {
		gcfg.TracerProvider = tel.tracing
	}
	// Every event is written to the store's outbox and delivered from
	// there: to the webhook, or, with none, to the log alone (a budget
	// alert is a WARN line either way).
	gcfg.Events = outbox.LogOnly{}
	if sender != nil {
		gcfg.Events = sender
	}
	gcfg.EventDelivery = &outbox.Config{RetryFor: cfg.Webhooks.RetryFor}
	if offline {
		gcfg.Transport = recorded.Transport()
	}
	gw, err := toolgate.New(store, gcfg)
	if err != nil {
		closeAll()
		return nil, err
	}
	closeStoreOnly := closeAll
	closeAll = func() {
		// Before the store, which the deliverer uses. An event not yet
		// delivered stays in the store for the next instance to send.
		wait, cancel := context.WithTimeout(context.Background(), webhookDrain)
		if err := gw.Close(wait); err != nil {
			log.Info("stopped with event deliveries in progress; they are sent again by the next instance", "error", err)
		}
		cancel()
		closeStoreOnly()
	}
	// An interface holding a nil pointer would not be nil: set only when on.
	var tokens apikey.TokenVerifier
	var verifier *oauth.Verifier
	if cfg.OAuth != nil {
		if verifier, err = newVerifier(ctx, cfg, keys.isApprover, log); err != nil {
			closeAll()
			return nil, err
		}
		tokens = verifier
	}
	fl, err := newFleet(ctx, cfg, store, gw.Clock(), tel)
	if err != nil {
		closeAll()
		return nil, err
	}
	// Last, as the slowest to start: each server has up to 30 s.
	upstreams, err := startMCPServers(ctx, reg, cfg.MCPUpstreams(), cfg.PinsFile, tel, log)
	if err != nil {
		closeAll()
		return nil, err
	}
	if upstreams != nil {
		closeGateway := closeAll
		closeAll = func() {
			// First: the processes stop with the gateway, before the store
			// it records their calls in.
			_ = upstreams.Close()
			closeGateway()
		}
	}
	api := toolgatehttp.NewHandler(gw, &toolgatehttp.Options{
		Authenticator:     keys,
		Tokens:            tokens,
		Provider:          providerSignIn(cfg, keys.isApprover, fl.sealing, verifier),
		Sessions:          fl.sessions,
		AuthLimit:         fl.authLimit,
		ExposeUsageCounts: cfg.ExposeUsageCounts,
		Logger:            log,
	})
	agents, err := mcpserver.NewHandler(gw, tel.mcpOptions(&mcpserver.Options{Authenticator: keys, Tokens: tokens, AuthLimit: fl.authLimit,
		Logger: log, PublicURL: cfg.Approvals.PublicURL, AllowedHosts: cfg.AllowedHosts, Sealing: fl.sealing}))
	if err != nil {
		closeAll()
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", agents)
	if verifier != nil {
		// Where a client that was refused learns how to sign in (RFC 9728),
		// for the root and for /mcp.
		metadata := verifier.MetadataHandler("/mcp")
		mux.Handle(oauth.MetadataPath, metadata)
		mux.Handle(oauth.MetadataPath+"/", metadata)
	}
	mux.Handle("/", tel.traced(api))
	if upstreams != nil {
		mux.Handle("GET /healthz", healthz(upstreams))
	}
	s := &Server{cfg: cfg, log: log, gw: gw, handler: logRequests(log, mux), tel: tel, endStreams: agents.Close,
		release: closeAll, listening: listening, sealing: fl.sealing, generatedReceiptKey: generatedReceiptKey}
	s.reloading = reloader{access: keys, verifier: verifier, last: cfg, running: cfg}
	sum := cfg.shortSHA256()
	s.reloading.sum.Store(&sum)
	if tel.metrics != nil {
		tel.metrics.MustRegister(newConfigInfo(s.reloading.sum.Load))
	}
	return s, nil
}

// newWebhook makes the sender of approval webhooks, when the config asks
// for one, and the function that gives it the server's address for the
// approveUrl of each request, unless the config gives a publicUrl. The
// address is the operator's, never a caller's Host header: a webhook sends
// a person to it.
func newWebhook(a Approvals, log *slog.Logger) (*webhook.Sender, func(string), error) {
	var base atomic.Pointer[string]
	if a.PublicURL != "" {
		u := strings.TrimSuffix(a.PublicURL, "/")
		base.Store(&u)
	}
	listening := func(url string) { base.CompareAndSwap(nil, &url) }
	if a.WebhookURL == "" {
		return nil, listening, nil
	}
	s, err := webhook.New(a.WebhookURL, a.WebhookSecret, &webhook.Config{
		ApproveURL: func(id string) string {
			if b := base.Load(); b != nil {
				return *b + httpapi.ApprovalPagePath(id)
			}
			return ""
		},
	})
	if err != nil {
		return nil, nil, fmt.Errorf("approvals.webhookUrl: %w", err)
	}
	return s, listening, nil
}

// OpenStore opens the store cfg names, for a program that works on it
// beside the running servers (listing events, say); a database's schema is
// created or migrated on the way. The function returned closes it, logging
// a failure to log.
func OpenStore(ctx context.Context, cfg *Config, log *slog.Logger) (storage.Store, func(), error) {
	ctx, cancel := context.WithTimeout(ctx, storeOpenTimeout)
	defer cancel()
	switch cfg.StorageKind() {
	case "sqlite":
		s, err := sqlite.Open(ctx, cfg.sqlitePath(), nil)
		if err != nil {
			return nil, nil, fmt.Errorf("open SQLite store: %w", err)
		}
		return s, func() {
			if err := s.Close(); err != nil {
				log.Error("closing the SQLite store", "error", err)
			}
		}, nil
	case "postgres":
		s, err := postgres.Open(ctx, cfg.Storage, &postgres.Config{SynchronousAdmission: cfg.SynchronousAdmission})
		if err != nil {
			return nil, nil, fmt.Errorf("open PostgreSQL store: %w", err)
		}
		return s, s.Close, nil
	}
	return memory.New(), func() {}, nil
}
