package receipt_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/jcs"
	"github.com/toolgate/toolgate/receipt"
	"github.com/toolgate/toolgate/toolgatetype"
)

func ptr(s string) *string { return &s }

func sample(seq int64, prev *string) toolgatetype.Receipt {
	at := time.Date(2026, 11, 26, 9, 30, 0, 123456000, time.UTC)
	return toolgatetype.Receipt{
		SchemaVersion: toolgatetype.ReceiptSchemaVersion, ExecutionID: "0193f1c2-7a4e-7c3d-9f00-000000000001",
		Principal: "agent \"α\"", Tool: toolgatetype.ReceiptTool{Slug: "earthquake-search", ManifestDigest: "sha256:ab"},
		QuoteID: "q", InputSHA256: "00ff", OutputSHA256: ptr("11ee"), Status: toolgatetype.StatusCompleted,
		Cost:      toolgatetype.ReceiptCost{PriceUSD: "0.1000", FeeUSD: "0.0100", TotalUSD: "0.1100"},
		Approval:  toolgatetype.ReceiptApproval{Kind: toolgatetype.ApprovalKindGrant, GrantID: ptr("g"), DecidedBy: ptr("alice\n")},
		CreatedAt: at, FinishedAt: at.Add(time.Second), Seq: seq, Prev: prev,
	}
}

func TestEncodeIsTheCanonicalForm(t *testing.T) {
	for _, r := range []toolgatetype.Receipt{
		sample(1, nil),
		func() toolgatetype.Receipt {
			r := sample(7, ptr("sha256:00"))
			r.OutputSHA256, r.Approval.GrantID, r.Approval.DecidedBy = nil, nil, nil
			r.Resolution = &toolgatetype.Resolution{Outcome: toolgatetype.StatusFailed, ResolvedBy: "bob", ResolvedAt: time.Unix(1, 5).In(time.FixedZone("x", 3600)), Note: "<checked> & \u2028"}
			r.CreatedAt = r.CreatedAt.In(time.FixedZone("y", -7200))
			return r
		}(),
	} {
		marshaled, err := json.Marshal(r)
		require.NoError(t, err)
		// encoding/json keeps a time's zone; receipts are always in UTC.
		r.CreatedAt, r.FinishedAt = r.CreatedAt.UTC(), r.FinishedAt.UTC()
		if r.Resolution != nil {
			r.Resolution.ResolvedAt = r.Resolution.ResolvedAt.UTC()
		}
		marshaled, err = json.Marshal(r)
		require.NoError(t, err)
		want, err := jcs.Canonicalize(marshaled)
		require.NoError(t, err)
		assert.Equal(t, string(want), string(receipt.Encode(&r)))
	}
}

// chain signs n receipts of one principal with signer, linked.
func chain(t *testing.T, signer *receipt.Signer, n int) [][]byte {
	t.Helper()
	var out [][]byte
	var prev *string
	for i := 1; i <= n; i++ {
		r := sample(int64(i), prev)
		signed, hash := signer.Sign(&r)
		out = append(out, signed)
		prev = &hash
	}
	return out
}

func verifyAll(t *testing.T, keys toolgatetype.ReceiptKeys, receipts [][]byte) *receipt.Break {
	t.Helper()
	v, err := receipt.NewVerifier(keys)
	require.NoError(t, err)
	for _, r := range receipts {
		if err := v.Add(r); err != nil {
			var b *receipt.Break
			require.True(t, errors.As(err, &b), "%v", err)
			return b
		}
	}
	return nil
}

func TestAChainVerifiesAndEveryChangeBreaksIt(t *testing.T) {
	signer, err := receipt.GenerateSigner()
	require.NoError(t, err)
	keys := (&receipt.Keys{Signer: signer}).Document()
	receipts := chain(t, signer, 5)
	require.Nil(t, verifyAll(t, keys, receipts))

	// The signed bytes are themselves canonical, as served and exported.
	canonical, err := jcs.Canonicalize(receipts[0])
	require.NoError(t, err)
	assert.Equal(t, string(canonical), string(receipts[0]))

	edit := func(i int, from, to string) [][]byte {
		changed := append([][]byte(nil), receipts...)
		require.Contains(t, string(changed[i]), from)
		changed[i] = []byte(strings.Replace(string(changed[i]), from, to, 1))
		return changed
	}
	for name, c := range map[string]struct {
		receipts [][]byte
		seq      int64
		check    string
	}{
		"price":       {edit(2, `"priceUsd":"0.1000"`, `"priceUsd":"0.0100"`), 3, receipt.CheckSignature},
		"status":      {edit(2, `"status":"completed"`, `"status":"failed"`), 3, receipt.CheckSignature},
		"input hash":  {edit(2, `"inputSha256":"00ff"`, `"inputSha256":"00fe"`), 3, receipt.CheckSignature},
		"output hash": {edit(2, `"outputSha256":"11ee"`, `"outputSha256":null`), 3, receipt.CheckSignature},
		"deleted":     {append(append([][]byte(nil), receipts[:2]...), receipts[3:]...), 4, receipt.CheckSequence},
		"swapped":     {[][]byte{receipts[0], receipts[2], receipts[1], receipts[3], receipts[4]}, 3, receipt.CheckSequence},
		"first lost":  {receipts[1:], 2, receipt.CheckSequence},
	} {
		t.Run(name, func(t *testing.T) {
			b := verifyAll(t, keys, c.receipts)
			require.NotNil(t, b)
			assert.Equal(t, c.seq, b.Seq)
			assert.Equal(t, c.check, b.Check)
			assert.Contains(t, b.Error(), "seq ")
		})
	}

	// A receipt re-signed by someone else's key names the key.
	other, err := receipt.GenerateSigner()
	require.NoError(t, err)
	forged := append([][]byte(nil), receipts...)
	r := sample(3, nil)
	forged[2], _ = other.Sign(&r)
	b := verifyAll(t, keys, forged)
	require.NotNil(t, b)
	assert.Equal(t, receipt.CheckKey, b.Check)

	// A chain re-signed whole with a key of one's own still fails with the
	// published keys.
	assert.Equal(t, receipt.CheckKey, verifyAll(t, keys, chain(t, other, 3)).Check)
}

func TestARotationKeepsOldReceiptsVerifiable(t *testing.T) {
	old, err := receipt.GenerateSigner()
	require.NoError(t, err)
	_, key, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	der, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	current, err := receipt.LoadSigner(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), "2026-11")
	require.NoError(t, err)
	assert.Equal(t, "2026-11", current.KeyID())

	first := chain(t, old, 2)
	r := sample(3, nil)
	var prev struct {
		Receipt json.RawMessage `json:"receipt"`
	}
	require.NoError(t, json.Unmarshal(first[1], &prev))
	canonical, err := jcs.Canonicalize(prev.Receipt)
	require.NoError(t, err)
	h := receipt.Hash(canonical)
	r.Prev = &h
	third, _ := current.Sign(&r)
	all := append(first, third)

	oldPub := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: must(x509.MarshalPKIXPublicKey(old.PublicKey()))})
	pub, err := receipt.PublicKeyFromPEM(oldPub)
	require.NoError(t, err)
	keys := (&receipt.Keys{Signer: current, Retired: []toolgatetype.ReceiptKey{receipt.JWK(pub, receipt.Thumbprint(pub), "")}}).Document()
	require.Len(t, keys.Keys, 2)
	assert.Equal(t, toolgatetype.ReceiptKeyCurrent, keys.Keys[0].Status)
	assert.Equal(t, toolgatetype.ReceiptKeyRetired, keys.Keys[1].Status)
	assert.Nil(t, verifyAll(t, keys, all))

	// Without the retired key the old receipts no longer verify.
	b := verifyAll(t, (&receipt.Keys{Signer: current}).Document(), all)
	require.NotNil(t, b)
	assert.Equal(t, int64(1), b.Seq)
	assert.Equal(t, receipt.CheckKey, b.Check)
}

func TestBadKeysAreRefused(t *testing.T) {
	_, err := receipt.LoadSigner([]byte("not pem"), "")
	assert.ErrorContains(t, err, "PKCS#8")
	_, err = receipt.PublicKeyFromPEM([]byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"))
	assert.Error(t, err)
	_, err = receipt.NewVerifier(toolgatetype.ReceiptKeys{Keys: []toolgatetype.ReceiptKey{{Kty: "RSA", KeyID: "r"}}})
	assert.Error(t, err)
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func BenchmarkSign(b *testing.B) {
	signer, _ := receipt.GenerateSigner()
	r := sample(1, ptr("sha256:00"))
	b.ReportAllocs()
	for range b.N {
		signer.Sign(&r)
	}
}
