package spanbatch_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/toolgate/toolgate/internal/spanbatch"
)

// waitLimit only keeps a broken test from hanging; nothing is timed.
const waitLimit = 10 * time.Second

// recorder is an exporter that reports each batch's span names on a channel
// and, when hold is set, waits for it before returning.
type recorder struct {
	batches chan []string
	hold    chan struct{}
	mu      sync.Mutex
	shut    bool
}

func newRecorder() *recorder { return &recorder{batches: make(chan []string, 100)} }

func (r *recorder) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	names := make([]string, len(spans))
	for i, s := range spans {
		names[i] = s.Name()
	}
	r.batches <- names
	if r.hold != nil {
		<-r.hold
	}
	return nil
}

func (r *recorder) Shutdown(context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.shut = true
	return nil
}

func (r *recorder) next(t *testing.T) []string {
	t.Helper()
	select {
	case b := <-r.batches:
		return b
	case <-time.After(waitLimit):
		t.Fatal("no batch was exported")
		return nil
	}
}

func (r *recorder) none(t *testing.T) {
	t.Helper()
	select {
	case b := <-r.batches:
		t.Fatalf("unexpected batch %v", b)
	default:
	}
}

func setup(t *testing.T, opts *spanbatch.Options, sampler sdktrace.Sampler) (*recorder, *spanbatch.Processor, func(names ...string)) {
	t.Helper()
	r := newRecorder()
	p := spanbatch.New(r, opts)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(p), sdktrace.WithSampler(sampler))
	tr := tp.Tracer("test")
	end := func(names ...string) {
		for _, n := range names {
			_, s := tr.Start(context.Background(), n)
			s.End()
		}
	}
	return r, p, end
}

func TestSpansWaitForAFullBatch(t *testing.T) {
	t.Parallel()
	r, p, end := setup(t, &spanbatch.Options{ScheduleDelay: time.Hour, MaxExportBatchSize: 3}, sdktrace.AlwaysSample())
	end("a", "b")
	r.none(t) // two of three: nothing wakes the exporter
	end("c")
	assert.Equal(t, []string{"a", "b", "c"}, r.next(t))
	require.NoError(t, p.Shutdown(context.Background()))
}

func TestTheDelayExportsAPartialBatch(t *testing.T) {
	t.Parallel()
	r, p, end := setup(t, &spanbatch.Options{ScheduleDelay: time.Millisecond}, sdktrace.AlwaysSample())
	end("lonely")
	assert.Equal(t, []string{"lonely"}, r.next(t))
	require.NoError(t, p.Shutdown(context.Background()))
}

func TestAFullQueueDrops(t *testing.T) {
	t.Parallel()
	r, p, end := setup(t, &spanbatch.Options{ScheduleDelay: time.Hour, MaxQueueSize: 2}, sdktrace.AlwaysSample())
	r.hold = make(chan struct{})
	end("a", "b")
	assert.Equal(t, []string{"a", "b"}, r.next(t), "a full batch (the queue's size) is exported")
	// The exporter is busy: two spans fill the queue again, the next is dropped.
	end("c", "d", "e")
	assert.Equal(t, 1, p.Dropped())
	close(r.hold)
	assert.Equal(t, []string{"c", "d"}, r.next(t))
	require.NoError(t, p.Shutdown(context.Background()))
}

func TestShutdownAndFlushExportTheRest(t *testing.T) {
	t.Parallel()
	r, p, end := setup(t, &spanbatch.Options{ScheduleDelay: time.Hour, MaxExportBatchSize: 2}, sdktrace.AlwaysSample())
	end("a")
	require.NoError(t, p.ForceFlush(context.Background()))
	assert.Equal(t, []string{"a"}, r.next(t))
	end("b", "c", "d") // one full batch, and one left over
	assert.Equal(t, []string{"b", "c"}, r.next(t))
	require.NoError(t, p.Shutdown(context.Background()))
	assert.Equal(t, []string{"d"}, r.next(t))
	assert.True(t, r.shut)
	end("late")
	r.none(t)
	assert.Equal(t, 1, p.Dropped(), "a span ended after shutdown is dropped")
	require.NoError(t, p.Shutdown(context.Background()), "a second shutdown is harmless")
}

func TestUnsampledSpansAreNotQueued(t *testing.T) {
	t.Parallel()
	r, p, end := setup(t, nil, sdktrace.NeverSample())
	end("x", "y")
	require.NoError(t, p.Shutdown(context.Background()))
	r.none(t)
	assert.Zero(t, p.Dropped())
}
