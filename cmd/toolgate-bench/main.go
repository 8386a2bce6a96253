// Command toolgate-bench measures the gateway over HTTP on loopback against
// the floor of calling the provider directly.
//
// It starts a stub provider that answers every request with the recorded
// ten-event USGS body, and the gateway's HTTP API (httpapi.NewHandler over a
// toolgate.Gateway whose earthquake-search points at the stub) on a real
// net/http server on 127.0.0.1. Then, in one run, N clients (-clients)
// drive each phase for a fixed time (-duration) after a short warm-up:
//
//   - direct: GETs straight to the stub, the floor;
//   - memory: quote+call pairs through the gateway on the memory store;
//   - postgres: the same on PostgreSQL, when -store gives a URL;
//   - sqlite: the same on a SQLite file, when -store gives sqlite:PATH.
//
// The phases take turns in slices (-slice, 1 s), so that other work on a
// shared machine weighs on each alike. It prints requests (or pairs) per
// second, the median and 99th percentile latency of each phase, the
// process's CPU time per operation, the ratio of pairs/s to direct/s, the
// ratio of PostgreSQL's or SQLite's pairs/s to the memory store's, and the process's
// resident memory sampled under load. The stub, the gateway and the clients
// share the process and its CPUs, as they share the machine in any loopback
// test.
//
//	go run ./cmd/toolgate-bench                      # 32 clients, 10 s per phase
//	go run ./cmd/toolgate-bench -store 'postgres://postgres@127.0.0.1:5432/test?sslmode=disable'
//	go run ./cmd/toolgate-bench -store sqlite:bench.db         # a new file, removed afterwards
//	go run ./cmd/toolgate-bench -duration 300ms -clients 4   # a smoke run
//
// It exits 1 when any request fails, and 2 on bad flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strings"
	"time"
)

// config is what the flags set.
type config struct {
	duration   time.Duration
	warmup     time.Duration
	clients    int
	store      string        // "memory": the memory store only; a postgres:// URL or sqlite:PATH adds its phase
	memory     bool          // run the memory store's phase (false only with another store)
	slice      time.Duration // how long a phase runs before the next takes its turn
	cpuprofile string        // profile of the measured slices, for pprof
	memprofile string        // heap profile at the end, for pprof
}

func main() {
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "toolgate-bench:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("toolgate-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg config
	fs.DurationVar(&cfg.duration, "duration", 10*time.Second, "how long each phase is measured")
	fs.DurationVar(&cfg.warmup, "warmup", -1, "unmeasured load before each phase (default: a tenth of -duration, at most 1s)")
	fs.IntVar(&cfg.clients, "clients", 32, "concurrent clients")
	fs.StringVar(&cfg.store, "store", "memory", "memory, a PostgreSQL URL, or sqlite:PATH (a new file, removed afterwards), to measure it after the memory store")
	fs.BoolVar(&cfg.memory, "memory", true, "run the memory store's phase; -memory=false with another store shows the process's memory without it")
	fs.DurationVar(&cfg.slice, "slice", time.Second, "phases take turns measuring for this long each")
	fs.StringVar(&cfg.cpuprofile, "cpuprofile", "", "write a CPU profile of the measured slices, all phases, to this file")
	fs.StringVar(&cfg.memprofile, "memprofile", "", "write a heap profile, taken when measuring ends, to this file")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if cfg.warmup < 0 {
		cfg.warmup = min(cfg.duration/10, time.Second)
	}
	switch {
	case fs.NArg() > 0:
		err := fmt.Errorf("unexpected argument %q", fs.Arg(0))
		fmt.Fprintln(stderr, "toolgate-bench:", err)
		return cfg, err
	case cfg.duration <= 0 || cfg.slice <= 0 || cfg.clients < 1:
		err := errors.New("-duration and -slice must be positive and -clients at least 1")
		fmt.Fprintln(stderr, "toolgate-bench:", err)
		return cfg, err
	case storeKind(cfg.store) == "":
		err := fmt.Errorf("-store %q: want memory, a postgres:// URL or sqlite:PATH", cfg.store)
		fmt.Fprintln(stderr, "toolgate-bench:", err)
		return cfg, err
	case !cfg.memory && cfg.store == "memory":
		err := errors.New("-memory=false needs a PostgreSQL URL or sqlite:PATH in -store")
		fmt.Fprintln(stderr, "toolgate-bench:", err)
		return cfg, err
	}
	return cfg, nil
}

// Targets, from the performance issues; BENCHMARKS.md explains them.
// targetStorePerMem is a durable store's pairs/s against the memory
// store's at 32 clients, PostgreSQL's and SQLite's alike (issue 43).
const (
	targetPairsPerDirect = 0.25
	targetStorePerMem    = 0.5
	targetPeakRSSMiB     = 150
	rssSampleInterval    = 20 * time.Millisecond
)

func run(ctx context.Context, cfg config, out io.Writer) error {
	stub, err := startStub()
	if err != nil {
		return err
	}
	defer stub.close()
	rss := startRSSSampler(rssSampleInterval)
	defer rss.stop()

	direct := newPhase("direct", directLoad(stub.url, cfg.clients), cfg.clients)
	phases := []*phase{direct}
	var memory *phase
	if cfg.memory || cfg.store == "memory" {
		gw, err := startGateway(ctx, stub.url, "memory", cfg.clients)
		if err != nil {
			return err
		}
		defer gw.close()
		memory = newPhase("memory", pairLoad(gw), cfg.clients)
		phases = append(phases, memory)
	}
	var (
		other   *phase // the store -store names, when it is not the memory store
		otherGW *gatewayServer
	)
	kind := storeKind(cfg.store)
	if kind != "memory" {
		gw, err := startGateway(ctx, stub.url, cfg.store, cfg.clients)
		if err != nil {
			return err
		}
		defer gw.close()
		otherGW = gw
		other = newPhase(kind, pairLoad(gw), cfg.clients)
		phases = append(phases, other)
	}

	// The phases take turns, a slice each, so that other work on a shared
	// machine weighs on all of them alike rather than on whichever ran
	// when it peaked.
	if cfg.slice <= 0 {
		cfg.slice = cfg.duration
	}
	n := max(1, int((cfg.duration+cfg.slice-1)/cfg.slice))
	slice := cfg.duration / time.Duration(n)
	slices := "1 slice"
	if n > 1 {
		slices = fmt.Sprintf("%d slices taken in turn", n)
	}
	fmt.Fprintf(out, "toolgate-bench: %d clients, %s per phase in %s, after %s of warm-up each; GOMAXPROCS %d, %s\n",
		cfg.clients, cfg.duration, slices, cfg.warmup, runtime.GOMAXPROCS(0), runtime.Version())
	runtime.GC()
	for _, p := range phases {
		runSlice(ctx, p, cfg.warmup, false)
	}
	stopProfile, err := startProfile(cfg.cpuprofile)
	if err != nil {
		return err
	}
	var mem memoryFigures
	mem.afterWarmup = rss.current()
	rss.reset()
	for i := 0; i < n && ctx.Err() == nil; i++ {
		for _, p := range phases {
			runSlice(ctx, p, slice, true)
		}
	}
	mem.peak, mem.end, mem.hwm = rss.peak(), rss.current(), rss.hwm()
	stopProfile()
	if err := writeHeapProfile(cfg.memprofile); err != nil {
		return err
	}

	fmt.Fprintf(out, "%-9s %9s %10s %10s %10s %11s %7s\n", "phase", "ops", "ops/s", "p50", "p99", "CPU/op", "errors")
	for _, p := range phases {
		fmt.Fprintf(out, "%-9s %9d %10.0f %10s %10s %11s %7d\n", p.name, p.ops, p.rate(),
			round(p.percentile(0.50)), round(p.percentile(0.99)), round(p.cpuPerOp()), p.errors)
	}
	fmt.Fprintln(out)
	if memory != nil {
		ratio := memory.rate() / direct.rate()
		fmt.Fprintf(out, "pairs/s ÷ direct/s (memory): %.3f   target ≥ %.2f: %s   (by CPU per op: %.3f)\n",
			ratio, targetPairsPerDirect, verdict(ratio >= targetPairsPerDirect), cpuRatio(direct, memory))
	}
	if other != nil {
		fmt.Fprintf(out, "pairs/s ÷ direct/s (%s): %.3f   (by CPU per op, this process only: %.3f)\n",
			kind, other.rate()/direct.rate(), cpuRatio(direct, other))
	}
	if other != nil && memory != nil {
		r := other.rate() / memory.rate()
		target := ""
		if kind == "postgres" || kind == "sqlite" {
			target = fmt.Sprintf("   target ≥ %.2f: %s", targetStorePerMem, verdict(r >= targetStorePerMem))
		}
		fmt.Fprintf(out, "pairs/s %s ÷ memory: %.3f%s   (by CPU per op, this process only: %.3f)\n",
			kind, r, target, cpuRatio(memory, other))
	}
	if otherGW != nil && otherGW.batches != nil {
		otherGW.batches.report(out)
	}
	if otherGW != nil && otherGW.work != nil {
		// The counts are complete once the pool's connections are gone.
		otherGW.close()
		fmt.Fprintln(out)
		otherGW.work.report(out)
		fmt.Fprintln(out)
	}
	// Only the memory store keeps anything in the process: a record of each
	// call, replayable for 24 hours. PostgreSQL and SQLite keep them in the
	// database (SQLite in this process, but on disk, beyond a bounded page
	// cache).
	kept := "nothing kept in the process"
	if memory != nil {
		kept = fmt.Sprintf("%+.2f KiB per pair the memory store kept", float64(mem.end-mem.afterWarmup)/1024/float64(max(memory.ops, 1)))
	}
	fmt.Fprintf(out, "RSS: %.1f MiB after warm-up, %.1f MiB at the end (%s), %.1f MiB peak (VmHWM %.1f MiB)   target < %d MiB: %s\n",
		mib(mem.afterWarmup), mib(mem.end), kept, mib(mem.peak), mib(mem.hwm), targetPeakRSSMiB, verdict(mib(mem.peak) < targetPeakRSSMiB))

	failed := 0
	var first error
	for _, p := range phases {
		failed += p.errors
		if first == nil {
			first = p.firstErr
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d requests failed; first: %v", failed, first)
	}
	return ctx.Err()
}

// storeKind names the store -store gives: "memory", "postgres" or
// "sqlite", or "" when it names none of them.
func storeKind(store string) string {
	switch {
	case store == "memory":
		return "memory"
	case strings.HasPrefix(store, "postgres://") || strings.HasPrefix(store, "postgresql://"):
		return "postgres"
	case strings.HasPrefix(store, "sqlite:") && len(store) > len("sqlite:"):
		return "sqlite"
	}
	return ""
}

func round(d time.Duration) string {
	switch {
	case d >= 10*time.Millisecond:
		return d.Round(100 * time.Microsecond).String()
	case d >= 10*time.Microsecond:
		return d.Round(time.Microsecond).String()
	}
	return d.String()
}

// cpuRatio is a's CPU per op over b's: what b's rate over a's would be if
// both phases had the same CPU to themselves.
func cpuRatio(a, b *phase) float64 {
	if b.cpuPerOp() == 0 {
		return 0
	}
	return float64(a.cpuPerOp()) / float64(b.cpuPerOp())
}

func verdict(met bool) string {
	if met {
		return "met"
	}
	return "NOT met"
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// writeHeapProfile writes what the heap holds to path, if one is asked for.
func writeHeapProfile(path string) error {
	if path == "" {
		return nil
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC()
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// startProfile starts a CPU profile into path, if one is asked for.
func startProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
