package toolgate

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/toolgate/toolgate/internal/executor"
	"github.com/toolgate/toolgate/receipt"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// The gateway's side of receipts: what goes into an execution's receipt,
// handed to the store as a storage.Seal so that the receipt is kept in the
// step that finishes the execution. The receipt package signs and checks.

// receiptOf is the receipt of a call's execution exec, finished at
// finished, but for its seq and prev, which the store supplies. The audit
// fields come from the execution as admitted (cl.Execution), so a run that
// took over an abandoned one signs what was admitted, not what it assumes.
func receiptOf(c *call, adm admission, cl executor.Claim, exec *toolgatetype.Execution, finished time.Time) toolgatetype.Receipt {
	e := cl.Execution
	r := toolgatetype.Receipt{
		SchemaVersion: toolgatetype.ReceiptSchemaVersion,
		ExecutionID:   exec.ID,
		Principal:     c.principal,
		Tool:          toolgatetype.ReceiptTool{Slug: e.ToolSlug, ManifestDigest: e.ManifestDigest},
		QuoteID:       e.QuoteID.String(),
		InputSHA256:   inputSHA256(c.input),
		Status:        exec.Status,
		Cost:          toolgatetype.ReceiptCost{PriceUSD: exec.Cost.PriceUSD, FeeUSD: exec.Cost.FeeUSD, TotalUSD: exec.Cost.TotalUSD},
		Approval:      toolgatetype.ReceiptApproval{Kind: e.Approval},
		CreatedAt:     e.CreatedAt.UTC(),
		FinishedAt:    finished,
	}
	if r.Tool.Slug == "" { // an execution admitted before its audit fields were stored
		r.Tool = toolgatetype.ReceiptTool{Slug: c.tool.Tool.Slug, ManifestDigest: c.tool.Digest}
	}
	if exec.Status == toolgatetype.StatusCompleted && len(exec.Output) > 0 {
		sum := receipt.OutputSHA256(exec.Output)
		r.OutputSHA256 = &sum
	}
	if e.GrantID != uuid.Nil {
		grant := e.GrantID.String()
		r.Approval.GrantID = &grant
		if adm.grant != nil && adm.grant.ID == e.GrantID && adm.grant.DecidedBy != "" {
			by := adm.grant.DecidedBy
			r.Approval.DecidedBy = &by
		}
	}
	return r
}

// resolutionReceipt is the receipt of exec's resolution: the ambiguous
// receipt it had, now with the resolved status and the resolution, its
// output still unknown.
func resolutionReceipt(prior *toolgatetype.SignedReceipt, e storage.Execution, exec *toolgatetype.Execution) toolgatetype.Receipt {
	var r toolgatetype.Receipt
	if prior != nil {
		r = prior.Receipt
	} else {
		// Finished before this gateway kept receipts: what the store says
		// of it, with no input hash to give.
		r = toolgatetype.Receipt{
			SchemaVersion: toolgatetype.ReceiptSchemaVersion,
			ExecutionID:   e.ID.String(),
			Principal:     e.Principal,
			Tool:          toolgatetype.ReceiptTool{Slug: e.ToolSlug, ManifestDigest: e.ManifestDigest},
			QuoteID:       e.QuoteID.String(),
			Cost:          toolgatetype.ReceiptCost{PriceUSD: exec.Cost.PriceUSD, FeeUSD: exec.Cost.FeeUSD, TotalUSD: exec.Cost.TotalUSD},
			Approval:      toolgatetype.ReceiptApproval{Kind: e.Approval},
			CreatedAt:     e.CreatedAt.UTC(),
			FinishedAt:    e.FinishedAt.UTC(),
		}
	}
	r.Status, r.OutputSHA256, r.Resolution = exec.Status, nil, exec.Resolution
	return r
}

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

// developmentReceiptKeys generates the key of a gateway configured with
// none, and logs its public half so that its receipts can be checked while
// the key lives.
func developmentReceiptKeys(log *slog.Logger) (*receipt.Keys, error) {
	signer, err := receipt.GenerateSigner()
	if err != nil {
		return nil, err
	}
	log.Warn("receipts are signed with a key generated at start, for development only: configure a signing key so that they verify after a restart",
		"keyId", signer.KeyID(), "publicKey", base64.RawURLEncoding.EncodeToString(signer.PublicKey()))
	return &receipt.Keys{Signer: signer}, nil
}
