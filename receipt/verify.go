package receipt

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"

	"github.com/toolgate/toolgate/internal/jcs"
	"github.com/toolgate/toolgate/internal/strictjson"
	"github.com/toolgate/toolgate/toolgatetype"
)

// The checks a receipt can fail, as a Break names them.
const (
	CheckFormat    = "format"    // not a signed receipt at all
	CheckSchema    = "schema"    // a schemaVersion this verifier does not know
	CheckKey       = "key"       // signed with an unknown key or algorithm
	CheckSignature = "signature" // the signature does not match the receipt
	CheckSequence  = "sequence"  // seq is not the one after the principal's previous receipt
	CheckLink      = "prev"      // prev is not the hash of the principal's previous receipt
)

// signedEnvelope is a signed receipt as served and exported.
type signedEnvelope struct {
	Receipt   json.RawMessage                `json:"receipt"`
	Signature *toolgatetype.ReceiptSignature `json:"signature"`
}

// The members a signed receipt may have: the envelope's and the
// signature's (the receipt's are checked once its schema is known), and
// the receipt's.
var (
	envelopeShape = strictjson.ShapeOf(reflect.TypeFor[signedEnvelope]())
	receiptShape  = strictjson.ShapeOf(reflect.TypeFor[toolgatetype.Receipt]())
)

// Break is the first place a chain fails to verify.
type Break struct {
	Index     int    // the receipt's position in what was verified, from 1
	Principal string // whose chain broke, when the receipt says
	Seq       int64  // the seq the receipt carries; 0 when unreadable
	Check     string // which check failed: one of the Check constants
	Detail    string
}

func (b *Break) Error() string {
	if b.Seq == 0 {
		return fmt.Sprintf("receipt %d: %s: %s", b.Index, b.Check, b.Detail)
	}
	return fmt.Sprintf("seq %d of %q (receipt %d): %s: %s", b.Seq, b.Principal, b.Index, b.Check, b.Detail)
}

// Verifier checks receipts, one after another, against a set of public
// keys: every signature, and for each principal that its receipts come in
// seq order from 1 with no gap, each linked to the one before. Receipts of
// many principals may be interleaved; each principal's must be in order.
//
// A chain that verifies may still have lost receipts at its end: only the
// gateway can say how long a chain is (GET /v1/receipts).
type Verifier struct {
	keys   map[string]ed25519.PublicKey
	chains map[string]link
	count  int
}

// link is where a principal's chain stands: its last seq and hash.
type link struct {
	seq  int64
	hash string
}

// NewVerifier returns a verifier trusting the keys of doc, current and
// retired alike. Keys that are not Ed25519 JWKs are refused.
func NewVerifier(doc toolgatetype.ReceiptKeys) (*Verifier, error) {
	v := &Verifier{keys: map[string]ed25519.PublicKey{}, chains: map[string]link{}}
	for _, k := range doc.Keys {
		if k.Kty != "OKP" || k.Crv != "Ed25519" {
			return nil, fmt.Errorf("receipt: key %q is %s/%s, not an Ed25519 key", k.KeyID, k.Kty, k.Crv)
		}
		x, err := base64.RawURLEncoding.DecodeString(k.X)
		if err != nil || len(x) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("receipt: key %q has no valid Ed25519 public key", k.KeyID)
		}
		v.keys[k.KeyID] = ed25519.PublicKey(x)
	}
	if len(v.keys) == 0 {
		return nil, fmt.Errorf("receipt: no keys to verify with")
	}
	return v, nil
}

// Count is how many receipts verified so far.
func (v *Verifier) Count() int { return v.count }

// Principals is how many principals' chains were seen.
func (v *Verifier) Principals() int { return len(v.chains) }

// AddLines verifies the signed receipts of r, a JSON lines file such as
// "toolgate receipts export" writes: one a line, blank lines skipped. It
// stops at the first receipt Add refuses, and returns its line, from 1,
// with Add's error; a line's position is not its receipt's when the file
// has blank lines, and a line that is no receipt has no seq to find it by.
func (v *Verifier) AddLines(r io.Reader) (line int, err error) {
	lines := bufio.NewScanner(r)
	lines.Buffer(make([]byte, 64<<10), 16<<20)
	for lines.Scan() {
		line++
		if text := lines.Bytes(); len(bytes.TrimSpace(text)) > 0 {
			if err := v.Add(text); err != nil {
				return line, err
			}
		}
	}
	return 0, lines.Err()
}

// Add verifies the next signed receipt, as served or exported. It returns
// a *Break when the receipt or its place in the chain is wrong; after a
// break the verifier's state is unchanged, so the caller stops there.
func (v *Verifier) Add(signed []byte) error {
	index := v.count + 1
	// A member twice or one this verifier does not know is a break, before
	// anything is read: encoding/json would keep the last of two
	// "receipt"s (and match names whatever their case), so a line could
	// show one receipt to a person or another tool and verify another.
	var member *strictjson.MemberError
	if errors.As(strictjson.Check(signed, envelopeShape), &member) {
		return &Break{Index: index, Check: CheckFormat, Detail: member.Error()}
	}
	var envelope signedEnvelope
	if err := json.Unmarshal(signed, &envelope); err != nil || len(envelope.Receipt) == 0 || envelope.Signature == nil {
		return &Break{Index: index, Check: CheckFormat, Detail: "not a signed receipt ({\"receipt\": ..., \"signature\": ...})"}
	}
	var r toolgatetype.Receipt
	if err := json.Unmarshal(envelope.Receipt, &r); err != nil {
		return &Break{Index: index, Check: CheckFormat, Detail: "the receipt cannot be read: " + err.Error()}
	}
	fail := func(check, format string, args ...any) error {
		return &Break{Index: index, Principal: r.Principal, Seq: r.Seq, Check: check, Detail: fmt.Sprintf(format, args...)}
	}
	if r.SchemaVersion != toolgatetype.ReceiptSchemaVersion {
		return fail(CheckSchema, "schemaVersion %q, this verifier knows %q", r.SchemaVersion, toolgatetype.ReceiptSchemaVersion)
	}
	// The receipt's own members are checked once its schema is known to be
	// this verifier's: a receipt of a later schema says so, rather than
	// naming the first member it added.
	if errors.As(strictjson.Check(envelope.Receipt, receiptShape), &member) {
		inLine := strictjson.MemberError{Path: "receipt." + member.Path, Duplicate: member.Duplicate}
		return fail(CheckFormat, "%s", inLine.Error())
	}
	sig := envelope.Signature
	if sig.Alg != Alg {
		return fail(CheckKey, "signed with %q, not %s", sig.Alg, Alg)
	}
	pub, ok := v.keys[sig.KeyID]
	if !ok {
		return fail(CheckKey, "signed with key %q, which is not among the published keys", sig.KeyID)
	}
	canonical, err := jcs.Canonicalize(envelope.Receipt)
	if err != nil {
		return fail(CheckFormat, "the receipt has no canonical form: %v", err)
	}
	value, err := base64.RawURLEncoding.DecodeString(sig.Value)
	if err != nil || !ed25519.Verify(pub, canonical, value) {
		return fail(CheckSignature, "the signature of key %q does not match the receipt: it was changed after it was signed", sig.KeyID)
	}
	last := v.chains[r.Principal]
	if r.Seq != last.seq+1 {
		if last.seq == 0 {
			return fail(CheckSequence, "the chain of %q starts at seq %d, not 1: receipts before it are missing", r.Principal, r.Seq)
		}
		return fail(CheckSequence, "seq %d follows seq %d: receipts are missing or out of order", r.Seq, last.seq)
	}
	switch {
	case last.seq == 0 && r.Prev != nil:
		return fail(CheckLink, "the first receipt links to %s instead of to nothing", *r.Prev)
	case last.seq > 0 && (r.Prev == nil || *r.Prev != last.hash):
		return fail(CheckLink, "prev does not match seq %d (%s): the receipt before it was changed or replaced", last.seq, last.hash)
	}
	v.chains[r.Principal] = link{seq: r.Seq, hash: Hash(canonical)}
	v.count++
	return nil
}
