// Package receipting writes the gateway's side of receipts: what goes into
// an execution's receipt, handed to the store as a storage.Seal so that
// the receipt is kept in the step that finishes the execution. The
// receipt package signs and checks.
package receipting

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/toolgate/toolgate/internal/executor"
	"github.com/toolgate/toolgate/receipt"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// Of is the receipt of principal's call of tool with input (canonical),
// its execution exec finished at finished, but for its seq and prev, which
// the store supplies. grant is the approval request that approved it, nil
// when none. The audit
// fields come from the execution as admitted (cl.Execution), so a run that
// took over an abandoned one signs what was admitted, not what it assumes.
func Of(principal string, tool *registry.Version, input []byte, grant *storage.ApprovalRequest, cl executor.Claim, exec *toolgatetype.Execution, finished time.Time) toolgatetype.Receipt {
	e := cl.Execution
	r := toolgatetype.Receipt{
		SchemaVersion: toolgatetype.ReceiptSchemaVersion,
		ExecutionID:   exec.ID,
		Principal:     principal,
		Tool:          toolgatetype.ReceiptTool{Slug: e.ToolSlug, ManifestDigest: e.ManifestDigest},
		QuoteID:       e.QuoteID.String(),
		InputSHA256:   InputSHA256(input),
		Status:        exec.Status,
		Cost:          toolgatetype.ReceiptCost{PriceUSD: exec.Cost.PriceUSD, FeeUSD: exec.Cost.FeeUSD, TotalUSD: exec.Cost.TotalUSD},
		Approval:      toolgatetype.ReceiptApproval{Kind: e.Approval},
		CreatedAt:     e.CreatedAt.UTC(),
		FinishedAt:    finished,
	}
	if r.Tool.Slug == "" { // an execution admitted before its audit fields were stored
		r.Tool = toolgatetype.ReceiptTool{Slug: tool.Tool.Slug, ManifestDigest: tool.Digest}
	}
	if exec.Status == toolgatetype.StatusCompleted && len(exec.Output) > 0 {
		sum := receipt.OutputSHA256(exec.Output)
		r.OutputSHA256 = &sum
	}
	if e.GrantID != uuid.Nil {
		id := e.GrantID.String()
		r.Approval.GrantID = &id
		if grant != nil && grant.ID == e.GrantID && grant.DecidedBy != "" {
			by := grant.DecidedBy
			r.Approval.DecidedBy = &by
		}
	}
	return r
}

// Resolution is the receipt of exec's resolution: the ambiguous
// receipt it had, now with the resolved status and the resolution, its
// output still unknown.
func Resolution(prior *toolgatetype.SignedReceipt, e storage.Execution, exec *toolgatetype.Execution) toolgatetype.Receipt {
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

// DevelopmentKeys generates the key of a gateway configured with
// none, and logs its public half so that its receipts can be checked while
// the key lives.
func DevelopmentKeys(log *slog.Logger) (*receipt.Keys, error) {
	signer, err := receipt.GenerateSigner()
	if err != nil {
		return nil, err
	}
	log.Warn("receipts are signed with a key generated at start, for development only: configure a signing key so that they verify after a restart",
		"keyId", signer.KeyID(), "publicKey", base64.RawURLEncoding.EncodeToString(signer.PublicKey()))
	return &receipt.Keys{Signer: signer}, nil
}

// InputSHA256 is the lowercase hex SHA-256 of a canonical input, which a
// receipt and a grant are bound to.
func InputSHA256(canonical []byte) string {
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:])
}
