package toolgate

import (
	"context"
	"encoding/json"

	"github.com/toolgate/toolgate/toolgatetype"
)

// Receipts returns up to limit of principal's receipts with seq above
// after, in seq order, each as it was signed: the page the chain is read
// and verified by, offline, with the keys of ReceiptKeys.
func (g *Gateway) Receipts(ctx context.Context, principal string, after int64, limit int) (toolgatetype.ReceiptPage, error) {
	if err := validPrincipal(principal); err != nil {
		return toolgatetype.ReceiptPage{}, err
	}
	if after < 0 {
		e := newError(toolgatetype.CodeInvalidRequest, "after must be a seq, 0 or more")
		e.Parameter = "after"
		return toolgatetype.ReceiptPage{}, e
	}
	if limit <= 0 || limit > toolgatetype.MaxReceiptPage {
		e := newError(toolgatetype.CodeInvalidRequest, "limit must be 1 to %d", toolgatetype.MaxReceiptPage)
		e.Parameter = "limit"
		return toolgatetype.ReceiptPage{}, e
	}
	// One more than asked says whether there is a next page, but for the
	// largest page, which says so whenever it is full.
	got, err := g.store.ListReceipts(ctx, principal, after, min(limit+1, toolgatetype.MaxReceiptPage))
	if err != nil {
		return toolgatetype.ReceiptPage{}, internalError(err)
	}
	more := len(got) > limit || (limit == toolgatetype.MaxReceiptPage && len(got) == limit)
	got = got[:min(len(got), limit)]
	page := toolgatetype.ReceiptPage{Receipts: make([]json.RawMessage, len(got))}
	for i, r := range got {
		page.Receipts[i] = r.Signed
	}
	if more {
		next := got[len(got)-1].Seq
		page.Next = &next
	}
	return page, nil
}

// ReceiptsFor is Receipts of a principal approver approves for: the chain
// an approver audits. A principal it does not approve for is not found, as
// on the other routes of an approver.
func (g *Gateway) ReceiptsFor(ctx context.Context, approver, principal string, after int64, limit int) (toolgatetype.ReceiptPage, error) {
	if err := g.requireApproverOf(ctx, approver, principal); err != nil {
		return toolgatetype.ReceiptPage{}, err
	}
	return g.Receipts(ctx, principal, after, limit)
}

// ReceiptKeys is the public key set receipts verify with: the key signing
// now and every retired one configured.
func (g *Gateway) ReceiptKeys() toolgatetype.ReceiptKeys {
	return g.receipts.Document()
}
