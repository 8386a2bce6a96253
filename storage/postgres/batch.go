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
//
// A call's reads (with r.Decide) are answered from what the Store
// remembers when it can (see memo), in no round trip at all, which makes
// a call on the instance that quoted it two. What memory answered and
// r.Decide refused is decided again on the database's answer, the quote
// forgotten.
func (s *Store) ReadBatch(ctx context.Context, r storage.Reads) (storage.ReadResult, error) {
	if res, ok := s.memo.answer(r); ok {
		if r.Decide(res) == nil {
			return res, nil
		}
		s.memo.forgetQuote(r.QuoteID)
	}
	res, err := s.readBatch(ctx, r)
	if err != nil || r.Decide == nil {
		return res, err
	}
	return res, r.Decide(res)
}

// readBatch is ReadBatch from the database.
func (s *Store) readBatch(ctx context.Context, r storage.Reads) (storage.ReadResult, error) {
	var (
		res   storage.ReadResult
		batch = &pgx.Batch{}
	)
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
	if len(r.Limits) > 0 {
		query, args, err := s.measureSQL(r.Principal, r.Limits)
		if err != nil {
			return storage.ReadResult{}, err
		}
		batch.Queue(query, args...).Query(func(rows pgx.Rows) error {
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
		s.queueCreateQuote(batch, *r.CreateQuote, r.MaxOpenQuotes, r.Key, held)
	}
	if batch.Len() == 0 {
		return res, nil
	}
	// Close runs the callbacks in order and reports the first error, the
	// commit's included: nothing counts before it.
	if err := s.pool.SendBatch(ctx, batch).Close(); err != nil {
		return storage.ReadResult{}, translate(err)
	}
	s.memo.read(r, res)
	if r.CreateQuote != nil && res.Prior == nil {
		s.memo.quoteCreated(*r.CreateQuote)
	}
	return res, nil
}

// absentIsNil makes a read that found nothing a success that leaves its
// answer nil.
func absentIsNil(err error) error {
	if errors.Is(err, storage.ErrNotFound) {
		return nil
	}
	return err
}
