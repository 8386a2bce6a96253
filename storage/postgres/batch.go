package postgres

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/toolgate/toolgate/storage"
)

// ReadBatch does the reads of r, and stores r.CreateQuote after them, in one
// round trip: the statements are pipelined in one batch, which the server
// runs as one implicit transaction, so a failing statement stores nothing.
// Each statement is the one the Store's own method runs, so the answers are
// the same. A quote and a call each start with such a batch, which makes a
// quote one round trip and a call three (these reads, BeginExecution and
// FinishExecution) instead of the five and four of one method at a time.
// What it reads, the Store remembers for the calls that follow (see memo
// and AdmitCall). Quotes that arrive while others are in flight share
// their round trip and transaction (see quoteBatch).
func (s *Store) ReadBatch(ctx context.Context, r storage.Reads) (storage.ReadResult, error) {
	return s.quoteReads(ctx, r)
}

// AdmitCall does a call's reads, decides it with decide and admits it
// (BeginExecution). The reads are answered from what the Store remembers
// when it can (see memo), in no round trip at all, which makes a call on
// the instance that quoted it two: its admission and its result. Memory
// may be out of date, so nothing is refused or admitted on it alone: what
// decide refused on memory's answer is decided again on the database's,
// the quote forgotten, and the admission of what it admitted first checks,
// in its own statement, that the spend controls and approval remembered
// are still the database's (see admitSQL); when they are not, it writes
// nothing, what was out of date is forgotten, and the call is decided
// again on the database's answer, which is then admitted without such a
// check. decide is thus called at most twice.
func (s *Store) AdmitCall(ctx context.Context, r storage.Reads, decide func(storage.ReadResult) (storage.Begin, error)) (storage.BeginResult, error) {
	if m, ok := s.memo.answer(r); ok {
		b, err := decide(m.read)
		if err != nil {
			s.memo.forgetQuote(r.QuoteID)
		} else if res, err := s.begin(ctx, toAdmit{Begin: b, recalled: &m}); !errors.Is(err, errStale) {
			return res, err
		}
	}
	read, err := s.readBatch(ctx, r)
	if err != nil {
		return storage.BeginResult{}, err
	}
	b, err := decide(read)
	if err != nil {
		return storage.BeginResult{}, err
	}
	return s.BeginExecution(ctx, b)
}

// readBatch is ReadBatch from the database, in a batch of its own.
func (s *Store) readBatch(ctx context.Context, r storage.Reads) (storage.ReadResult, error) {
	var (
		res     storage.ReadResult
		refused error
		batch   = &pgx.Batch{}
	)
	if err := s.queueReads(batch, r, &res, &refused, false); err != nil {
		return storage.ReadResult{}, err
	}
	if batch.Len() == 0 {
		return res, nil
	}
	// Close runs the callbacks in order and reports the first error, the
	// commit's included: nothing counts before it.
	if err := s.pool.SendBatch(ctx, batch).Close(); err != nil {
		return storage.ReadResult{}, translate(err)
	}
	if refused != nil {
		return storage.ReadResult{}, refused
	}
	s.readDone(r, res)
	return res, nil
}

// queueReads queues the statements of r on batch, their answers into res
// and the refusal of r's quote, if any, into refused (see
// queueCreateQuote); locked is queueCreateQuote's. It queues nothing when
// it fails.
func (s *Store) queueReads(batch *pgx.Batch, r storage.Reads, res *storage.ReadResult, refused *error, locked bool) error {
	var (
		measure     string
		measureArgs []any
	)
	if len(r.Limits) > 0 {
		var err error
		if measure, measureArgs, err = s.measureSQL(r.Principal, r.Limits); err != nil {
			return err
		}
	}
	if r.Key != "" {
		batch.Queue(s.sql(getIdempotencySQL), r.Principal, r.Key).QueryRow(func(row pgx.Row) error {
			rec, err := scanIdempotency(row)
			if err == nil {
				res.Prior = &rec
			}
			return absentIsNil(err)
		})
	}
	if r.Approval {
		batch.Queue(s.sql(getApprovalSQL), r.Principal, r.ToolID).QueryRow(func(row pgx.Row) error {
			a, err := scanApproval(row)
			if err == nil {
				res.Approval = &a
			}
			return absentIsNil(err)
		})
	}
	if r.SpendControls {
		batch.Queue(s.sql(getSpendControlsSQL), r.Principal).QueryRow(func(row pgx.Row) error {
			c, err := scanSpendControls(row, r.Principal)
			if err == nil {
				res.SpendControls = &c
			}
			return absentIsNil(err)
		})
	}
	if r.QuoteID != uuid.Nil {
		batch.Queue(s.sql(getQuoteSQL), bytesOf(r.QuoteID)).QueryRow(func(row pgx.Row) error {
			q, err := scanQuote(row)
			if err == nil {
				res.Quote = &q
			}
			return absentIsNil(err)
		})
	}
	if r.GrantID != uuid.Nil {
		batch.Queue(s.sql(getApprovalRequestSQL), bytesOf(r.GrantID)).QueryRow(func(row pgx.Row) error {
			g, err := scanApprovalRequest(row)
			if err == nil {
				res.Grant = &g
			}
			return absentIsNil(err)
		})
	}
	if measure != "" {
		batch.Queue(measure, measureArgs...).Query(func(rows pgx.Rows) error {
			used, err := scanMeasured(rows, len(r.Limits))
			res.Used = used
			return err
		})
	}
	if r.CreateQuote != nil {
		var held func() bool
		if r.Key != "" {
			held = func() bool { return res.Prior != nil }
		}
		s.queueCreateQuote(batch, *r.CreateQuote, r.MaxOpenQuotes, r.Key, held, refused, locked)
	}
	return nil
}

// readDone remembers what r read, res, once its batch has committed (see
// memo), and the quote it stored, if it did.
func (s *Store) readDone(r storage.Reads, res storage.ReadResult) {
	s.memo.read(r, res)
	if r.CreateQuote != nil && res.Prior == nil {
		s.memo.quoteCreated(*r.CreateQuote)
	}
}

// absentIsNil makes a read that found nothing a success that leaves its
// answer nil.
func absentIsNil(err error) error {
	if errors.Is(err, storage.ErrNotFound) {
		return nil
	}
	return err
}
