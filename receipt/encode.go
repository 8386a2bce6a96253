// Package receipt makes and checks toolgate's receipts: the signed, chained
// statements of finished executions described in toolgatetype.Receipt.
//
// A receipt's signature and its successor's prev both cover the receipt's
// RFC 8785 canonical form, so anyone holding the public keys can check a
// chain offline, with no access to the gateway or its store: Verifier says
// where the first break is and what broke there.
package receipt

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"sync"
	"time"

	"github.com/toolgate/toolgate/internal/jcs"
	"github.com/toolgate/toolgate/toolgatetype"
)

// Encode returns the RFC 8785 canonical form of r. It writes the members in
// their canonical order by hand, which is what a receipt per call can
// afford; the tests hold it to jcs.Canonicalize of json.Marshal(r).
func Encode(r *toolgatetype.Receipt) []byte {
	b := make([]byte, 0, 768)
	b = append(b, `{"approval":{"decidedBy":`...)
	b = appendOptional(b, r.Approval.DecidedBy)
	b = append(b, `,"grantId":`...)
	b = appendOptional(b, r.Approval.GrantID)
	b = append(b, `,"kind":`...)
	b = jcs.AppendString(b, string(r.Approval.Kind))
	b = append(b, `},"cost":{"feeUsd":`...)
	b = jcs.AppendString(b, r.Cost.FeeUSD)
	b = append(b, `,"priceUsd":`...)
	b = jcs.AppendString(b, r.Cost.PriceUSD)
	b = append(b, `,"totalUsd":`...)
	b = jcs.AppendString(b, r.Cost.TotalUSD)
	b = append(b, `},"createdAt":`...)
	b = appendTime(b, r.CreatedAt)
	b = append(b, `,"executionId":`...)
	b = jcs.AppendString(b, r.ExecutionID)
	b = append(b, `,"finishedAt":`...)
	b = appendTime(b, r.FinishedAt)
	b = append(b, `,"inputSha256":`...)
	b = jcs.AppendString(b, r.InputSHA256)
	b = append(b, `,"outputSha256":`...)
	b = appendOptional(b, r.OutputSHA256)
	b = append(b, `,"prev":`...)
	b = appendOptional(b, r.Prev)
	b = append(b, `,"principal":`...)
	b = jcs.AppendString(b, r.Principal)
	b = append(b, `,"quoteId":`...)
	b = jcs.AppendString(b, r.QuoteID)
	b = append(b, `,"resolution":`...)
	if res := r.Resolution; res == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, `{"note":`...)
		b = jcs.AppendString(b, res.Note)
		b = append(b, `,"outcome":`...)
		b = jcs.AppendString(b, string(res.Outcome))
		b = append(b, `,"resolvedAt":`...)
		b = appendTime(b, res.ResolvedAt)
		b = append(b, `,"resolvedBy":`...)
		b = jcs.AppendString(b, res.ResolvedBy)
		b = append(b, '}')
	}
	b = append(b, `,"schemaVersion":`...)
	b = jcs.AppendString(b, r.SchemaVersion)
	b = append(b, `,"seq":`...)
	b = strconv.AppendInt(b, r.Seq, 10)
	b = append(b, `,"status":`...)
	b = jcs.AppendString(b, string(r.Status))
	b = append(b, `,"tool":{"manifestDigest":`...)
	b = jcs.AppendString(b, r.Tool.ManifestDigest)
	b = append(b, `,"slug":`...)
	b = jcs.AppendString(b, r.Tool.Slug)
	return append(b, `}}`...)
}

func appendOptional(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return jcs.AppendString(b, *s)
}

// appendTime writes t as encoding/json does (RFC 3339 with as many
// fractional digits as it needs), in UTC.
func appendTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.UTC().AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}

// Hash is the chain's link to a receipt: "sha256:" and the lowercase hex
// SHA-256 of its canonical form.
func Hash(canonical []byte) string {
	sum := sha256.Sum256(canonical)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// SHA256Hex is the lowercase hex SHA-256 of b, the form of a receipt's
// input and output hashes.
func SHA256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// OutputSHA256 is the receipt's hash of an execution's output: the SHA-256
// of its canonical form. An output with no canonical form (which the
// gateway never produces) is hashed as it is, so the receipt still binds it.
func OutputSHA256(output []byte) string {
	b := canonicalBuffers.Get().(*jcs.Buffer)
	canonical, err := b.Canonicalize(output)
	if err != nil {
		canonical = output
	}
	sum := SHA256Hex(canonical)
	if b.Cap() <= maxPooledCanonical {
		canonicalBuffers.Put(b)
	}
	return sum
}

// canonicalBuffers hold the canonical forms of outputs while they are
// hashed: every call hashes one, a few kilobytes that are dropped at once.
var canonicalBuffers = sync.Pool{New: func() any { return new(jcs.Buffer) }}

// maxPooledCanonical is the most memory a pooled buffer keeps; one grown on
// an exceptionally large output goes to the collector instead.
const maxPooledCanonical = 256 << 10
