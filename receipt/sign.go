package receipt

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"

	"github.com/toolgate/toolgate/internal/jcs"
	"github.com/toolgate/toolgate/toolgatetype"
)

// Alg is the one signature algorithm of receipts.
const Alg = "Ed25519"

// Signer signs receipts with one Ed25519 key.
type Signer struct {
	keyID string
	key   ed25519.PrivateKey
	// header is the signed envelope's text between the receipt and the
	// signature value, the same for every receipt of this key.
	header []byte
}

// NewSigner returns a signer of key named keyID; an empty keyID names the
// key by its RFC 7638 JWK thumbprint, which anyone can recompute from the
// public key.
func NewSigner(key ed25519.PrivateKey, keyID string) *Signer {
	pub := key.Public().(ed25519.PublicKey)
	if keyID == "" {
		keyID = Thumbprint(pub)
	}
	header := []byte(`,"signature":{"alg":"` + Alg + `","keyId":`)
	header = jcs.AppendString(header, keyID)
	header = append(header, `,"value":"`...)
	return &Signer{keyID: keyID, key: key, header: header}
}

// GenerateSigner returns a signer of a new random key, for development: its
// receipts verify only while its public key is kept somewhere.
func GenerateSigner() (*Signer, error) {
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	return NewSigner(key, ""), nil
}

// LoadSigner reads an Ed25519 private key in PKCS#8 PEM ("PRIVATE KEY",
// as `openssl genpkey -algorithm ed25519` writes it).
func LoadSigner(pemText []byte, keyID string) (*Signer, error) {
	block, _ := pem.Decode(pemText)
	if block == nil || block.Type != "PRIVATE KEY" {
		return nil, errors.New("receipt: the signing key is not a PKCS#8 PEM private key (BEGIN PRIVATE KEY)")
	}
	parsed, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("receipt: the signing key cannot be read as PKCS#8: %w", err)
	}
	key, ok := parsed.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("receipt: the signing key is a %T, not an Ed25519 key", parsed)
	}
	return NewSigner(key, keyID), nil
}

// KeyID names the signer's key in every signature it makes.
func (s *Signer) KeyID() string { return s.keyID }

// PublicKey is the signer's public key.
func (s *Signer) PublicKey() ed25519.PublicKey { return s.key.Public().(ed25519.PublicKey) }

// Sign signs r and returns the signed receipt's canonical bytes
// ({"receipt": ..., "signature": ...}) and r's hash, the next receipt's prev.
func (s *Signer) Sign(r *toolgatetype.Receipt) (signed []byte, hash string) {
	signed, hash, _ = s.sign(r)
	return signed, hash
}

func (s *Signer) sign(r *toolgatetype.Receipt) (signed []byte, hash string, sig toolgatetype.ReceiptSignature) {
	canonical := Encode(r)
	value := ed25519.Sign(s.key, canonical)
	signed = make([]byte, 0, len(`{"receipt":`)+len(canonical)+len(s.header)+base64.RawURLEncoding.EncodedLen(len(value))+3)
	signed = append(signed, `{"receipt":`...)
	signed = append(signed, canonical...)
	signed = append(signed, s.header...)
	start := len(signed)
	signed = base64.RawURLEncoding.AppendEncode(signed, value)
	sig = toolgatetype.ReceiptSignature{KeyID: s.keyID, Alg: Alg, Value: string(signed[start:])}
	signed = append(signed, `"}}`...)
	return signed, Hash(canonical), sig
}

// Thumbprint is the RFC 7638 thumbprint of an Ed25519 public key's JWK:
// the unpadded base64url SHA-256 of {"crv":"Ed25519","kty":"OKP","x":...}.
func Thumbprint(pub ed25519.PublicKey) string {
	sum := sha256.Sum256([]byte(`{"crv":"Ed25519","kty":"OKP","x":"` + base64.RawURLEncoding.EncodeToString(pub) + `"}`))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// PublicKeyFromPEM reads an Ed25519 public key from PEM: a public key
// ("PUBLIC KEY", SubjectPublicKeyInfo) or a PKCS#8 private key, whose
// public half is taken. Retired keys are configured this way.
func PublicKeyFromPEM(pemText []byte) (ed25519.PublicKey, error) {
	block, _ := pem.Decode(pemText)
	if block == nil {
		return nil, errors.New("receipt: not a PEM key")
	}
	var parsed any
	var err error
	switch block.Type {
	case "PUBLIC KEY":
		parsed, err = x509.ParsePKIXPublicKey(block.Bytes)
	case "PRIVATE KEY":
		parsed, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	default:
		return nil, fmt.Errorf("receipt: a PEM %q block is not a key this reads (PUBLIC KEY or PRIVATE KEY)", block.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("receipt: the key cannot be read: %w", err)
	}
	switch k := parsed.(type) {
	case ed25519.PublicKey:
		return k, nil
	case ed25519.PrivateKey:
		return k.Public().(ed25519.PublicKey), nil
	}
	return nil, fmt.Errorf("receipt: the key is a %T, not an Ed25519 key", parsed)
}

// JWK is pub as a receipt key document lists it.
func JWK(pub ed25519.PublicKey, keyID, status string) toolgatetype.ReceiptKey {
	return toolgatetype.ReceiptKey{
		Kty: "OKP", Crv: "Ed25519", X: base64.RawURLEncoding.EncodeToString(pub),
		KeyID: keyID, Alg: "EdDSA", Use: "sig", Status: status,
	}
}

// Keys is what a gateway signs and verifies receipts with: the signer of
// new receipts and the public keys of those it signed before a rotation.
type Keys struct {
	Signer  *Signer
	Retired []toolgatetype.ReceiptKey
}

// Document is the key set as GET /.well-known/toolgate-receipt-keys
// serves it: the current key first, then the retired ones.
func (k *Keys) Document() toolgatetype.ReceiptKeys {
	doc := toolgatetype.ReceiptKeys{Keys: []toolgatetype.ReceiptKey{JWK(k.Signer.PublicKey(), k.Signer.KeyID(), toolgatetype.ReceiptKeyCurrent)}}
	for _, r := range k.Retired {
		if r.KeyID == k.Signer.KeyID() {
			continue
		}
		r.Status = toolgatetype.ReceiptKeyRetired
		doc.Keys = append(doc.Keys, r)
	}
	return doc
}
