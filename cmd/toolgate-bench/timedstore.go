package main

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/toolgate/toolgate/storage"
)

// timedStore counts and times the store calls a pair makes, so that a
// pair's latency can be split into the waits for its store: the quote's
// reads and insert, the call's reads and admission (one step of the
// store, AdmitCall, whose reads a store may answer from memory), and its
// result.
// Everything else passes through untimed.
type timedStore struct {
	storage.Store
	steps [stepCount]timedStep
}

type timedStep struct {
	calls atomic.Int64
	nanos atomic.Int64
}

const (
	stepQuote  = iota // ReadBatch with a quote to store
	stepReads         // ReadBatch of a call
	stepAdmit         // AdmitCall: a call's reads and admission
	stepBegin         // BeginExecution: a takeover's admission
	stepFinish        // FinishExecution
	stepOther         // GetIdempotency, CreateQuote
	stepCount
)

var stepNames = [stepCount]string{"quote: reads and insert", "call: reads", "call: reads and admission", "call: takeover", "call: result", "other"}

func (s *timedStore) time(step int, start time.Time) {
	s.steps[step].calls.Add(1)
	s.steps[step].nanos.Add(int64(time.Since(start)))
}

// ReadBatch times the store's reads.
func (s *timedStore) ReadBatch(ctx context.Context, r storage.Reads) (storage.ReadResult, error) {
	step := stepReads
	if r.CreateQuote != nil {
		step = stepQuote
	}
	defer s.time(step, time.Now())
	return s.Store.ReadBatch(ctx, r)
}

func (s *timedStore) AdmitCall(ctx context.Context, r storage.Reads, decide func(storage.ReadResult) (storage.Begin, error)) (storage.BeginResult, error) {
	defer s.time(stepAdmit, time.Now())
	return s.Store.AdmitCall(ctx, r, decide)
}

func (s *timedStore) BeginExecution(ctx context.Context, b storage.Begin) (storage.BeginResult, error) {
	defer s.time(stepBegin, time.Now())
	return s.Store.BeginExecution(ctx, b)
}

func (s *timedStore) FinishExecution(ctx context.Context, f storage.Finish) error {
	defer s.time(stepFinish, time.Now())
	return s.Store.FinishExecution(ctx, f)
}

func (s *timedStore) GetIdempotency(ctx context.Context, principal, key string) (storage.IdempotencyRecord, error) {
	defer s.time(stepOther, time.Now())
	return s.Store.GetIdempotency(ctx, principal, key)
}

func (s *timedStore) CreateQuote(ctx context.Context, q storage.Quote) error {
	defer s.time(stepOther, time.Now())
	return s.Store.CreateQuote(ctx, q)
}

// report prints each step's calls per pair and mean wait.
func (s *timedStore) report(out io.Writer, pairs float64) {
	fmt.Fprintf(out, "  %-26s %9s %10s\n", "store calls per pair", "calls", "mean wait")
	for i := range s.steps {
		n := s.steps[i].calls.Load()
		if n == 0 {
			continue
		}
		fmt.Fprintf(out, "  %-26s %9.2f %10s\n", stepNames[i], float64(n)/pairs, round(time.Duration(s.steps[i].nanos.Load()/n)))
	}
}
