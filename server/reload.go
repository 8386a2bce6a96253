package server

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolgate/toolgate/oauth"
)

// DefaultConfigPollInterval is how often a server started from a config
// file reads the file, to reload it when it changed.
const DefaultConfigPollInterval = 2 * time.Second

// reloadable are the config's fields a reload applies, by Config field
// name, each with how, in this order: what may fail first, so that a
// failure leaves the running config as it was. Every other field takes
// effect at the next start. A field that becomes reloadable is one more
// line here.
var reloadable = []struct {
	field string
	apply func(s *Server, cfg *Config) error
}{
	{"Rules", func(s *Server, cfg *Config) error { return s.gw.SetRules(cfg.Rules) }},
	{"Approvers", (*Server).applyAccess},
	{"Budgets", func(s *Server, cfg *Config) error { return s.gw.SetBudgets(budgetDefinitions(cfg)) }},
}

// reloader is what a reload changes, and what it compares with.
type reloader struct {
	mu sync.Mutex // one reload at a time
	// last is the config last given or loaded, as it was: the next one's
	// fields needing a restart are told by comparing with it.
	last *Config
	// running is the config in force: the one the server started with,
	// its reloadable fields those of the last reload.
	running  *Config
	access   *liveAccess
	verifier *oauth.Verifier // nil without "oauth"
	// seen is the SHA-256 of the config file as last read, so the watch
	// reloads a file once per change, a broken one included.
	seen [sha256.Size]byte
	// sum is the short SHA-256 of the config in force, for
	// toolgate_config_info.
	sum atomic.Pointer[string]

	stopWatch context.CancelFunc
	watchDone chan struct{}
}

// Reload reads the config file the server was started from again and
// applies it as ReloadConfig does. A file that does not load changes
// nothing; the error, which names the field, is logged in one line and
// returned. A server whose config was not loaded from a file cannot
// Reload: ReloadConfig gives it a new one.
func (s *Server) Reload(ctx context.Context) error {
	path := s.cfg.source.path
	if path == "" {
		err := errors.New("config: the server's config was not loaded from a file, so there is none to read again")
		s.log.Error("config not reloaded", "error", err.Error())
		return err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		err = &ConfigError{Msg: "cannot read the config file: " + err.Error()}
		s.log.Error("config not reloaded; the running one stays", "error", err.Error())
		return err
	}
	return s.reloadFile(ctx, path, data)
}

// reloadFile is Reload of data, read from the file at path.
func (s *Server) reloadFile(ctx context.Context, path string, data []byte) error {
	r := &s.reloading
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = sha256.Sum256(data)
	next, err := loadConfig(path, data)
	if err == nil {
		err = context.Cause(ctx)
	}
	if err != nil {
		s.log.Error("config not reloaded; the running one stays", "error", err.Error())
		return err
	}
	return s.reload(next)
}

// ReloadConfig applies next's rules, approvers and budgets (those of reloadable)
// to the running server, once checked with the running config as a start
// would check them: calls in flight finish as they began, a budget's
// spend so far is kept, and from then on a removed approver key is
// refused and a new one accepted. The other fields take effect at the
// next start: those that differ are logged in one line. The outcome is
// logged in one line, with the new config's SHA-256 (see Config.SHA256);
// a config that does not pass changes nothing.
func (s *Server) ReloadConfig(next *Config) error {
	s.reloading.mu.Lock()
	defer s.reloading.mu.Unlock()
	return s.reload(next)
}

// reload is ReloadConfig, with the reloader locked.
func (s *Server) reload(next *Config) error {
	r := &s.reloading
	running := *r.running
	skip := map[string]bool{}
	for _, rl := range reloadable {
		skip[rl.field] = true
		f := reflect.ValueOf(&running).Elem().FieldByName(rl.field)
		f.Set(reflect.ValueOf(next).Elem().FieldByName(rl.field))
	}
	running.source = next.source
	if err := checkReloaded(&running); err != nil {
		s.log.Error("config not reloaded; the running one stays", "error", err.Error())
		return err
	}
	for _, rl := range reloadable {
		if err := rl.apply(s, &running); err != nil {
			err = fmt.Errorf("config: %s: %w", fileName(rl.field), err)
			s.log.Error("config reloaded in part: the fields before this one apply", "error", err.Error())
			return err
		}
	}
	if r.verifier != nil {
		// Tokens are read again: for the budgets' claims, and for the
		// approvers they may decide as.
		r.verifier.SetBudgetClaims(oauth.BudgetClaims(running.Budgets))
		r.verifier.SetClaimApprovers(claimApprovers(running.Approvers))
	}
	if changed := restartFields(r.last, next, skip); len(changed) > 0 {
		s.log.Warn("config: these fields changed and take effect at the next restart", "fields", changed)
	}
	r.last, r.running = next, &running
	sum := next.shortSHA256()
	r.sum.Store(&sum)
	s.log.Info("config reloaded", "sha256", sum)
	return nil
}

// checkReloaded checks the running config with the reloaded fields as a
// start checks a whole file across its fields: approvers and their keys
// against the principals that run, budgets' members and approvers.
func checkReloaded(cfg *Config) error {
	p := configParser{callerKeys: map[[sha256.Size]byte]string{}}
	for i, pr := range cfg.Principals {
		for j, k := range pr.APIKeys {
			p.callerKeys[sha256.Sum256([]byte(k))] = fmt.Sprintf("principals[%d].apiKeys[%d]", i, j)
		}
		for j, d := range pr.APIKeyDigests {
			p.callerKeys[d] = fmt.Sprintf("principals[%d].apiKeySha256[%d]", i, j)
		}
	}
	if err := checkPrincipals(cfg); err != nil {
		return err
	}
	if err := p.checkApprovers(cfg); err != nil {
		return err
	}
	return checkBudgets(cfg)
}

// applyAccess swaps in the access of cfg's principals and approvers.
func (s *Server) applyAccess(cfg *Config) error {
	acc, err := newAccess(cfg.Principals, cfg.Approvers)
	if err != nil {
		return err
	}
	s.reloading.access.cur.Store(acc)
	return nil
}

// ReloadOn reloads the config file (Reload) each time a signal comes on
// signals, until ctx is done: command toolgate's SIGHUP.
func (s *Server) ReloadOn(ctx context.Context, signals <-chan os.Signal) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-signals:
			_ = s.Reload(ctx) // logged
		}
	}
}

// watchConfig reads the config file every interval and reloads it when
// its SHA-256 changed and then stayed the same for one more tick, until
// ctx is done: an editor or a deploy writing the file in place is read
// once it is done, not half-written and refused. A file that cannot be
// read (one being replaced, say) is tried again at the next tick.
func (s *Server) watchConfig(ctx context.Context, interval time.Duration) {
	defer close(s.reloading.watchDone)
	path := s.cfg.source.path
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var settling [sha256.Size]byte // a changed file's hash, seen once
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		sum := sha256.Sum256(data)
		s.reloading.mu.Lock()
		same := sum == s.reloading.seen
		s.reloading.mu.Unlock()
		switch {
		case same:
		case sum != settling:
			settling = sum // changed: read again at the next tick
		default:
			_ = s.reloadFile(ctx, path, data) // logged
		}
	}
}

// startWatch starts watchConfig when the config came from a file and
// interval (Options.ConfigPollInterval) is not negative; Close stops it.
func (s *Server) startWatch(interval time.Duration) {
	r := &s.reloading
	r.seen = s.cfg.source.sum
	if s.cfg.source.path == "" || interval < 0 {
		return
	}
	if interval == 0 {
		interval = DefaultConfigPollInterval
	}
	ctx, stop := context.WithCancel(context.Background())
	r.stopWatch, r.watchDone = stop, make(chan struct{})
	go s.watchConfig(ctx, interval)
}

// stopWatching stops the watch, if any, and waits for a reload it is in.
func (s *Server) stopWatching() {
	if r := &s.reloading; r.stopWatch != nil {
		r.stopWatch()
		<-r.watchDone
	}
}
