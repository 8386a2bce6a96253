package storage

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/toolgate/toolgate/toolgatetype"
)

// Reads are the reads one gateway step needs before it decides anything,
// and, for a quote, the quote it then stores. A quote reads the caller's
// standing approval, spend controls and spend so far, and stores the
// quote (ReadBatch); a call reads its quote, the caller's spend controls,
// unless the approval it carries settles it the standing approval, and the
// approval request it carries as its grant, if any (AdmitCall). Asking for
// them together lets a store that pays a network round trip per method
// answer in one.
type Reads struct {
	Principal string
	// Approval asks for the principal's standing approval of ToolID.
	Approval bool
	ToolID   string
	// SpendControls asks for the principal's own spend controls.
	SpendControls bool
	// QuoteID asks for that quote, whoever it belongs to; uuid.Nil asks for none.
	QuoteID uuid.UUID
	// GrantID asks for that approval request, whoever it belongs to;
	// uuid.Nil asks for none.
	GrantID uuid.UUID
	// Limits asks what each limit's window holds for the principal, as
	// MeasureLimits measures it.
	Limits []Limit
	// CreateQuote, when set, is stored as Store.CreateQuoteCapped stores it
	// with MaxOpenQuotes as its cap (0: none), after the reads and only if
	// they all succeed.
	CreateQuote   *Quote
	MaxOpenQuotes int
	// Key asks for the principal's record of that Idempotency-Key
	// (ReadResult.Prior), as GetIdempotency gives it; "" asks for none.
	// When the key holds a record, CreateQuote is not stored: a retry of
	// a call is answered from its record, and needs no new quote.
	Key string
}

// ReadResult answers Reads. Something asked for and absent is nil, not an
// error; something not asked for is nil too.
type ReadResult struct {
	Approval      *Approval
	SpendControls *toolgatetype.SpendControls
	Quote         *Quote
	Grant         *ApprovalRequest
	Used          []decimal.Decimal // one per Reads.Limits, in order
	Prior         *IdempotencyRecord
}

// BatchReader is the part of Store that does the reads of one gateway step
// together.
type BatchReader interface {
	// ReadBatch does all of r. A backend where every method call costs a
	// round trip to a server does it in one; one whose calls cost nothing
	// does it method by method, with ReadEach. Its answers must be exactly
	// what the Store's own methods would give at the time, and on an error
	// nothing of r is stored.
	ReadBatch(ctx context.Context, r Reads) (ReadResult, error)
}

// AdmitEach is Store.AdmitCall done in turn on s: ReadBatch, decide, then
// BeginExecution. It is AdmitCall for a store that answers its reads from
// its database at the time (the memory and SQLite stores), or a fake.
func AdmitEach(ctx context.Context, s Store, r Reads, decide func(ReadResult) (Begin, error)) (BeginResult, error) {
	read, err := s.ReadBatch(ctx, r)
	if err != nil {
		return BeginResult{}, err
	}
	b, err := decide(read)
	if err != nil {
		return BeginResult{}, err
	}
	return s.BeginExecution(ctx, b)
}

// ReadEach does r on s method by method: ReadBatch for a store whose
// method calls cost nothing (the memory and SQLite stores), or a fake.
func ReadEach(ctx context.Context, s Store, r Reads) (ReadResult, error) {
	var res ReadResult
	if r.Key != "" {
		rec, err := s.GetIdempotency(ctx, r.Principal, r.Key)
		if found, err := present(err); err != nil {
			return ReadResult{}, err
		} else if found {
			res.Prior = &rec
		}
	}
	if r.Approval {
		a, err := s.GetApproval(ctx, r.Principal, r.ToolID)
		if found, err := present(err); err != nil {
			return ReadResult{}, err
		} else if found {
			res.Approval = &a
		}
	}
	if r.SpendControls {
		c, err := s.GetSpendControls(ctx, r.Principal)
		if found, err := present(err); err != nil {
			return ReadResult{}, err
		} else if found {
			res.SpendControls = &c
		}
	}
	if r.QuoteID != uuid.Nil {
		q, err := s.GetQuote(ctx, r.QuoteID)
		if found, err := present(err); err != nil {
			return ReadResult{}, err
		} else if found {
			res.Quote = &q
		}
	}
	if r.GrantID != uuid.Nil {
		g, err := s.GetApprovalRequest(ctx, r.GrantID)
		if found, err := present(err); err != nil {
			return ReadResult{}, err
		} else if found {
			res.Grant = &g
		}
	}
	if len(r.Limits) > 0 {
		used, err := s.MeasureLimits(ctx, r.Principal, r.Limits)
		if err != nil {
			return ReadResult{}, err
		}
		res.Used = used
	}
	if r.CreateQuote != nil && res.Prior == nil {
		if err := s.CreateQuoteCapped(ctx, *r.CreateQuote, r.MaxOpenQuotes); err != nil {
			return ReadResult{}, err
		}
	}
	return res, nil
}

// present turns a getter's error into whether the record was found.
func present(err error) (bool, error) {
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, ErrNotFound):
		return false, nil
	}
	return false, err
}
