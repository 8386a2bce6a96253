package tooldocs

import (
	"strconv"

	"github.com/toolgate/toolgate/httpapi"
	"github.com/toolgate/toolgate/internal/httpx"
	"github.com/toolgate/toolgate/toolgatetype"
)

// The receipts' routes, relative to where the API is mounted, as package
// httpapi serves them.
const (
	receiptsPath    = httpapi.ReceiptsPath
	receiptKeysPath = httpapi.ReceiptKeysPath
)

// receiptsNotice says what a receipt is, wherever the documents show one.
const receiptsNotice = "The gateway's signed receipt of the execution's outcome (for a resolved execution, the receipt of its resolution). " +
	"Receipts chain: each principal's are numbered by seq from 1 and each names the hash of the one before (prev), so a chain read from " + receiptsPath +
	" verifies offline with the public keys at " + receiptKeysPath + ". Absent only for executions that finished before the gateway kept receipts."

// receiptSchemas are the named schemas of receipts, their pages and their
// keys, with references to one another under prefix.
func receiptSchemas(prefix string) map[string]any {
	ref := func(name string) map[string]any { return map[string]any{"$ref": prefix + name} }
	object := func(required []string, props map[string]any) map[string]any {
		return map[string]any{"type": "object", "required": required, "properties": props}
	}
	str := func(description string) map[string]any {
		return map[string]any{"type": "string", "description": description}
	}
	nullableStr := func(pattern, description string) map[string]any {
		s := map[string]any{"type": []any{"string", "null"}, "description": description}
		if pattern != "" {
			s["pattern"] = pattern
		}
		return s
	}
	amount := func(description string) map[string]any {
		return map[string]any{"type": "string", "pattern": `^[0-9]+\.[0-9]{4}$`, "description": description + " (USD, decimal text with 4 decimals)"}
	}
	instant := func(description string) map[string]any {
		return map[string]any{"type": "string", "format": "date-time", "description": description}
	}
	base64url := func(chars int, description string) map[string]any {
		return map[string]any{"type": "string", "pattern": `^[A-Za-z0-9_-]{` + strconv.Itoa(chars) + `}$`, "description": description}
	}
	const hexSHA256 = `^[0-9a-f]{64}$`

	defs := map[string]any{}
	defs["Resolution"] = object([]string{"outcome", "resolvedBy", "resolvedAt", "note"}, map[string]any{
		"outcome":    map[string]any{"type": "string", "enum": []any{toolgatetype.StatusCompleted, toolgatetype.StatusFailed}},
		"resolvedBy": str("The approver who resolved it."),
		"resolvedAt": instant("When it was resolved."),
		"note":       str("The approver's note."),
	})
	defs["Receipt"] = object([]string{"schemaVersion", "executionId", "principal", "tool", "quoteId", "inputSha256", "outputSha256",
		"status", "cost", "approval", "resolution", "createdAt", "finishedAt", "seq", "prev"}, map[string]any{
		"schemaVersion": map[string]any{"type": "string", "const": toolgatetype.ReceiptSchemaVersion},
		"executionId":   map[string]any{"type": "string", "format": "uuid", "description": "The execution the receipt is of."},
		"principal":     str("Whose call it was: the chain the receipt belongs to."),
		"tool": object([]string{"slug", "manifestDigest"}, map[string]any{
			"slug":           str("The tool called."),
			"manifestDigest": str("The manifest digest of the exact version called; empty for a tool with no immutable version."),
		}),
		"quoteId": map[string]any{"type": "string", "format": "uuid", "description": "The quote the call was made under."},
		"inputSha256": map[string]any{"type": "string", "pattern": `^([0-9a-f]{64})?$`,
			"description": "Lowercase hex SHA-256 of the input's RFC 8785 canonical form; empty when the gateway did not keep it (an execution resolved after it finished before receipts were kept)."},
		"outputSha256": nullableStr(hexSHA256, "Lowercase hex SHA-256 of the output's RFC 8785 canonical form; null when there is no output (failed, ambiguous, or resolved)."),
		"status":       map[string]any{"type": "string", "enum": []any{toolgatetype.StatusCompleted, toolgatetype.StatusFailed, toolgatetype.StatusAmbiguous}},
		"cost": object([]string{"priceUsd", "feeUsd", "totalUsd"}, map[string]any{
			"priceUsd": amount("The provider's price"),
			"feeUsd":   amount("The gateway fee"),
			"totalUsd": amount("The total"),
		}),
		"approval": object([]string{"kind", "grantId", "decidedBy"}, map[string]any{
			"kind": map[string]any{"type": "string", "enum": []any{toolgatetype.ApprovalKindDigest, toolgatetype.ApprovalKindStanding, toolgatetype.ApprovalKindGrant},
				"description": "digest: the call named the digest it approves; standing: the caller's policy covered it; grant: an approver's grant."},
			"grantId":   map[string]any{"type": []any{"string", "null"}, "format": "uuid", "description": "The approver's grant; null when no grant approved the call."},
			"decidedBy": nullableStr("", "The approver who decided the grant; null when no grant approved the call, or it is not known."),
		}),
		"resolution": map[string]any{"anyOf": []any{ref("Resolution"), map[string]any{"type": "null"}},
			"description": "How an approver resolved an ambiguous execution; null but in the receipt of a resolution."},
		"createdAt":  instant("When the execution was admitted."),
		"finishedAt": instant("When it finished."),
		"seq":        map[string]any{"type": "integer", "minimum": 1, "description": "The receipt's place in the principal's chain, from 1, with no gaps."},
		"prev":       nullableStr(`^sha256:[0-9a-f]{64}$`, "sha256: and the lowercase hex SHA-256 of the RFC 8785 canonical form of the principal's previous receipt; null for the first."),
	})
	defs["ReceiptSignature"] = object([]string{"keyId", "alg", "value"}, map[string]any{
		"keyId": map[string]any{"type": "string", "minLength": 1, "description": "The kid of the key that signed, among those at " + receiptKeysPath + "."},
		"alg":   map[string]any{"type": "string", "const": "Ed25519"},
		"value": base64url(86, "The Ed25519 signature of the receipt's RFC 8785 canonical form, unpadded base64url."),
	})
	defs["SignedReceipt"] = object([]string{"receipt", "signature"}, map[string]any{
		"receipt":   ref("Receipt"),
		"signature": ref("ReceiptSignature"),
	})
	defs["ReceiptPage"] = object([]string{"receipts"}, map[string]any{
		"receipts": map[string]any{"type": "array", "items": ref("SignedReceipt"), "maxItems": toolgatetype.MaxReceiptPage,
			"description": "Receipts in seq order, each exactly as it was signed (RFC 8785 canonical JSON): keep their bytes to verify them later."},
		"next": map[string]any{"type": "integer", "minimum": 1, "description": "The after= of the next page; absent on the last."},
	})
	defs["ReceiptKey"] = object([]string{"kty", "crv", "x", "kid", "alg", "use", "status"}, map[string]any{
		"kty":    map[string]any{"type": "string", "const": "OKP"},
		"crv":    map[string]any{"type": "string", "const": "Ed25519"},
		"x":      base64url(43, "The Ed25519 public key, unpadded base64url."),
		"kid":    map[string]any{"type": "string", "minLength": 1, "description": "The keyId of the signatures the key verifies."},
		"alg":    map[string]any{"type": "string", "const": "EdDSA"},
		"use":    map[string]any{"type": "string", "const": "sig"},
		"status": map[string]any{"type": "string", "enum": []any{toolgatetype.ReceiptKeyCurrent, toolgatetype.ReceiptKeyRetired}, "description": "current: signs new receipts; retired: only verifies older ones."},
	})
	defs["ReceiptKeys"] = object([]string{"keys"}, map[string]any{
		"keys": map[string]any{"type": "array", "items": ref("ReceiptKey"), "minItems": 1, "description": "The current key first, then the retired ones."},
	})
	return defs
}

// receiptCodes are the codes the receipts' routes answer with beyond
// those of the quote and the call.
var receiptCodes = []toolgatetype.Code{toolgatetype.CodeNotFound, httpx.CodeInsufficientScope}

// receiptPaths are the OpenAPI path items of the receipts' routes.
func receiptPaths(schemaRef func(string) map[string]any, errorResponse func(status int, description string, codes ...toolgatetype.Code) map[string]any) map[string]any {
	jsonBody := func(schema any) map[string]any {
		return map[string]any{"application/json": map[string]any{"schema": schema}}
	}
	errorRef := func(status int) map[string]any {
		return map[string]any{"$ref": "#/components/responses/" + errorResponseName(status)}
	}
	return map[string]any{
		receiptsPath: map[string]any{"get": map[string]any{
			"operationId": "listReceipts",
			"summary":     "Read a chain of receipts",
			"description": "The caller's receipts, one per finished execution and one per resolution, in seq order, a page at a time: pass the page's next as after= for the next page. " +
				"With an approver key, principal= names whose chain to read, a principal the approver approves for; a caller always reads its own. " +
				"Verify the chain with the keys of " + receiptKeysPath + ": each signature covers the receipt's RFC 8785 canonical form, and each prev is the hash of the receipt before.",
			"parameters": []any{
				map[string]any{"name": "after", "in": "query", "required": false, "description": "Only receipts with seq above this one; 0 (the default) reads from the start.",
					"schema": map[string]any{"type": "integer", "minimum": 0, "default": 0}},
				map[string]any{"name": "limit", "in": "query", "required": false, "description": "The most receipts to answer with.",
					"schema": map[string]any{"type": "integer", "minimum": 1, "maximum": toolgatetype.MaxReceiptPage, "default": httpapi.DefaultReceiptLimit}},
				map[string]any{"name": "principal", "in": "query", "required": false, "description": "With an approver key, and only then, the principal whose chain to read (required).",
					"schema": map[string]any{"type": "string", "minLength": 1}},
			},
			"responses": map[string]any{
				"200": map[string]any{"description": "A page of the chain.", "content": jsonBody(schemaRef("ReceiptPage"))},
				"400": errorResponse(400, "after or limit is not a number in range, a parameter is given twice, or an approver named no principal; error.parameter names it.",
					toolgatetype.CodeInvalidRequest),
				"401": errorRef(401),
				"403": errorResponse(403, "The access token grants neither calling nor approving.", httpx.CodeInsufficientScope),
				"404": errorResponse(404, "The approver does not approve for the principal named (or no such principal exists: the two are not told apart).",
					toolgatetype.CodeNotFound),
				"429": errorRef(429),
				"500": errorRef(500),
			},
		}},
		receiptKeysPath: map[string]any{"get": map[string]any{
			"operationId": "receiptKeys",
			"summary":     "The public keys of receipts",
			"description": "Every key receipts may be signed with, as JSON Web Keys (RFC 8037): the current key and the retired ones, which still verify older receipts. Public: no key is needed.",
			"security":    []any{},
			"responses": map[string]any{
				"200": map[string]any{
					"description": "The key set.",
					"headers": map[string]any{"Cache-Control": map[string]any{"description": "How long the key set may be kept.",
						"schema": map[string]any{"type": "string"}}},
					"content": jsonBody(schemaRef("ReceiptKeys")),
				},
			},
		}},
	}
}
