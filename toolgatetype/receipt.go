package toolgatetype

import (
	"encoding/json"
	"time"
)

// ReceiptSchemaVersion names the receipt format a receipt follows.
const ReceiptSchemaVersion = "toolgate.receipt/v1"

// Receipt is the gateway's signed statement of one finished execution:
// what was called, at which version, for whom, at what price, approved how,
// with which input and output (as hashes only) and with what outcome. A
// principal's receipts form a chain: Seq counts them from 1 with no gaps
// and Prev is the hash of the one before, so a receipt changed, removed or
// moved breaks the chain where it happened.
//
// An execution gets one receipt when it finishes, and one more when a
// person resolves it after it finished ambiguous.
type Receipt struct {
	SchemaVersion string          `json:"schemaVersion"`
	ExecutionID   string          `json:"executionId"`
	Principal     string          `json:"principal"`
	Tool          ReceiptTool     `json:"tool"`
	QuoteID       string          `json:"quoteId"`
	InputSHA256   string          `json:"inputSha256"`  // lowercase hex of the canonical input
	OutputSHA256  *string         `json:"outputSha256"` // lowercase hex of the canonical output; nil when none
	Status        Status          `json:"status"`
	Cost          ReceiptCost     `json:"cost"`
	Approval      ReceiptApproval `json:"approval"`
	Resolution    *Resolution     `json:"resolution"` // nil but for the receipt of a resolution
	CreatedAt     time.Time       `json:"createdAt"`
	FinishedAt    time.Time       `json:"finishedAt"`
	Seq           int64           `json:"seq"`
	Prev          *string         `json:"prev"` // "sha256:<hex>" of the previous receipt; nil for the first
}

// ReceiptTool names the tool and the exact version called.
type ReceiptTool struct {
	Slug           string `json:"slug"`
	ManifestDigest string `json:"manifestDigest"`
}

// ReceiptCost is what the execution was priced at, in USD decimal strings.
type ReceiptCost struct {
	PriceUSD string `json:"priceUsd"`
	FeeUSD   string `json:"feeUsd"`
	TotalUSD string `json:"totalUsd"`
}

// ReceiptApproval is how the call was approved: Kind as the execution's
// audit shows it; GrantID and DecidedBy name the approver's grant and who
// decided it, nil when no grant approved the call.
type ReceiptApproval struct {
	Kind      ApprovalKind `json:"kind"`
	GrantID   *string      `json:"grantId"`
	DecidedBy *string      `json:"decidedBy"`
}

// SignedReceipt is a receipt with the gateway's signature, which covers the
// receipt's RFC 8785 canonical form.
type SignedReceipt struct {
	Receipt   Receipt          `json:"receipt"`
	Signature ReceiptSignature `json:"signature"`
}

// ReceiptSignature is an Ed25519 signature: which key made it, and its
// value in unpadded base64url.
type ReceiptSignature struct {
	KeyID string `json:"keyId"`
	Alg   string `json:"alg"` // "Ed25519"
	Value string `json:"value"`
}

// ReceiptPage is the body of GET /v1/receipts: receipts in seq order, and
// the seq to pass as after= for the next page (absent on the last).
type ReceiptPage struct {
	Receipts []json.RawMessage `json:"receipts"`
	Next     *int64            `json:"next,omitempty"`
}

// MaxReceiptPage is the most receipts one ReceiptPage holds.
const MaxReceiptPage = 1000

// ReceiptKeys is the body of GET /.well-known/toolgate-receipt-keys: every
// public key receipts may be signed with, the current one and those retired.
type ReceiptKeys struct {
	Keys []ReceiptKey `json:"keys"`
}

// ReceiptKey is one Ed25519 public key as a JSON Web Key (RFC 8037), with
// whether it signs new receipts (current) or only verifies old ones
// (retired).
type ReceiptKey struct {
	Kty    string `json:"kty"` // "OKP"
	Crv    string `json:"crv"` // "Ed25519"
	X      string `json:"x"`   // the public key, unpadded base64url
	KeyID  string `json:"kid"`
	Alg    string `json:"alg"` // "EdDSA"
	Use    string `json:"use"` // "sig"
	Status string `json:"status"`
}

// Receipt key statuses.
const (
	ReceiptKeyCurrent = "current"
	ReceiptKeyRetired = "retired"
)
