// Package spanbatch is an OpenTelemetry span processor that hands ended
// spans to an exporter in batches, as the SDK's batch span processor does,
// without waking its exporting goroutine for every span.
//
// The SDK's processor sends each ended span over a channel to its
// goroutine, which wakes for each one: a goroutine handoff per span, three
// per quote and call. On a gateway with a core or two that handoff cost as
// much as making the spans. Here, ending a span appends it to a buffer
// under a mutex; the goroutine wakes when a batch is full or the schedule
// delay has passed, and exports what has gathered.
package spanbatch

import (
	"context"
	"errors"
	"sync"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Defaults, those of the SDK's batch span processor and of the
// OTEL_BSP_* variables.
const (
	DefaultScheduleDelay      = 5 * time.Second
	DefaultMaxQueueSize       = 2048
	DefaultMaxExportBatchSize = 512
	DefaultExportTimeout      = 30 * time.Second
)

// Options tune a Processor. A nil *Options, and every zero field, means
// the default.
type Options struct {
	// ScheduleDelay is the longest a span waits before it is exported.
	ScheduleDelay time.Duration
	// MaxQueueSize is how many spans may wait; spans ended while that many
	// wait are dropped, so a slow collector never holds up calls.
	MaxQueueSize int
	// MaxExportBatchSize is the most spans one export sends, and the
	// count that wakes the exporting goroutine before the delay is up.
	MaxExportBatchSize int
	// ExportTimeout bounds one export.
	ExportTimeout time.Duration
}

func (o *Options) withDefaults() Options {
	out := Options{}
	if o != nil {
		out = *o
	}
	if out.ScheduleDelay <= 0 {
		out.ScheduleDelay = DefaultScheduleDelay
	}
	if out.MaxQueueSize <= 0 {
		out.MaxQueueSize = DefaultMaxQueueSize
	}
	if out.MaxExportBatchSize <= 0 {
		out.MaxExportBatchSize = DefaultMaxExportBatchSize
	}
	out.MaxExportBatchSize = min(out.MaxExportBatchSize, out.MaxQueueSize)
	if out.ExportTimeout <= 0 {
		out.ExportTimeout = DefaultExportTimeout
	}
	return out
}

// Processor is an sdktrace.SpanProcessor. Make one with New; Shutdown
// stops it after exporting what is left.
type Processor struct {
	exporter sdktrace.SpanExporter
	opts     Options

	mu      sync.Mutex
	queue   []sdktrace.ReadOnlySpan
	dropped int
	stopped bool

	full     chan struct{} // a batch is ready; holds at most one wake-up
	stop     chan struct{}
	done     chan struct{}
	exportMu sync.Mutex // one export at a time, in order
	stopOnce sync.Once
}

var _ sdktrace.SpanProcessor = (*Processor)(nil)

// New returns a Processor exporting through exporter, and starts its
// goroutine. opts may be nil.
func New(exporter sdktrace.SpanExporter, opts *Options) *Processor {
	o := opts.withDefaults()
	p := &Processor{
		exporter: exporter,
		opts:     o,
		queue:    make([]sdktrace.ReadOnlySpan, 0, o.MaxExportBatchSize),
		full:     make(chan struct{}, 1),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	go p.run()
	return p
}

// OnStart implements sdktrace.SpanProcessor; nothing happens at a start.
func (p *Processor) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// OnEnd queues a sampled span for export, or drops it when the queue is full.
func (p *Processor) OnEnd(s sdktrace.ReadOnlySpan) {
	if !s.SpanContext().IsSampled() {
		return
	}
	p.mu.Lock()
	if p.stopped || len(p.queue) >= p.opts.MaxQueueSize {
		p.dropped++
		p.mu.Unlock()
		return
	}
	p.queue = append(p.queue, s)
	ready := len(p.queue) == p.opts.MaxExportBatchSize
	p.mu.Unlock()
	if ready {
		select {
		case p.full <- struct{}{}:
		default: // a wake-up is already pending
		}
	}
}

// Dropped is how many spans were dropped because the queue was full.
func (p *Processor) Dropped() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dropped
}

func (p *Processor) run() {
	defer close(p.done)
	t := time.NewTicker(p.opts.ScheduleDelay)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
		case <-p.full:
		}
		// An export that fails loses its spans, as the SDK's does; the
		// exporter has retried what it could.
		_ = p.export(context.Background())
	}
}

// export sends everything queued, a batch at a time.
func (p *Processor) export(ctx context.Context) error {
	p.exportMu.Lock()
	defer p.exportMu.Unlock()
	var errs []error
	for {
		p.mu.Lock()
		n := min(len(p.queue), p.opts.MaxExportBatchSize)
		batch := make([]sdktrace.ReadOnlySpan, n)
		copy(batch, p.queue)
		p.queue = append(p.queue[:0], p.queue[n:]...)
		p.mu.Unlock()
		if n == 0 {
			return errors.Join(errs...)
		}
		ectx, cancel := context.WithTimeout(ctx, p.opts.ExportTimeout)
		if err := p.exporter.ExportSpans(ectx, batch); err != nil {
			errs = append(errs, err)
		}
		cancel()
		if ctx.Err() != nil {
			return errors.Join(append(errs, ctx.Err())...)
		}
	}
}

// ForceFlush exports every span queued so far.
func (p *Processor) ForceFlush(ctx context.Context) error { return p.export(ctx) }

// Shutdown stops the goroutine, exports what is queued and shuts the
// exporter down. Spans ended afterwards are dropped.
func (p *Processor) Shutdown(ctx context.Context) error {
	var err error
	p.stopOnce.Do(func() {
		close(p.stop)
		<-p.done
		p.mu.Lock()
		p.stopped = true // from here on, OnEnd drops
		p.mu.Unlock()
		err = errors.Join(p.export(ctx), p.exporter.Shutdown(ctx))
	})
	return err
}
