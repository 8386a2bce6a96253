package devidp

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"os"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// LoadKey reads a PEM private key (PKCS #8, PKCS #1 RSA or SEC 1 EC), as
// openssl genpkey writes it, to sign with across restarts.
func LoadKey(path string) (crypto.Signer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, fmt.Errorf("%s: no PEM block", path)
	}
	var key any
	switch block.Type {
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	default:
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if _, err := newSigningKey(key); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return key.(crypto.Signer), nil
}

// signingKey is the provider's one key, as op signs with it and as the
// key set publishes it.
type signingKey struct {
	id  string
	alg jose.SignatureAlgorithm
	key crypto.Signer
}

func newSigningKey(key any) (*signingKey, error) {
	k := &signingKey{}
	switch key := key.(type) {
	case *rsa.PrivateKey:
		if key.N.BitLen() < 2048 {
			return nil, errors.New("an RSA key of fewer than 2048 bits")
		}
		k.alg, k.key = jose.RS256, key
	case *ecdsa.PrivateKey:
		if key.Curve != elliptic.P256() {
			return nil, errors.New("an EC key not on P-256")
		}
		k.alg, k.key = jose.ES256, key
	case ed25519.PrivateKey:
		k.alg, k.key = jose.EdDSA, key
	default:
		return nil, fmt.Errorf("a %T: not an RSA, P-256 or Ed25519 key", key)
	}
	// The key's thumbprint names it, so that a key kept in a file keeps
	// its kid across restarts.
	tp, err := (&jose.JSONWebKey{Key: k.key.Public()}).Thumbprint(crypto.SHA256)
	if err != nil {
		return nil, err
	}
	k.id = base64.RawURLEncoding.EncodeToString(tp)
	return k, nil
}

var (
	_ op.SigningKey = (*signingKey)(nil)
	_ op.Key        = publicKey{}
)

func (k *signingKey) SignatureAlgorithm() jose.SignatureAlgorithm { return k.alg }
func (k *signingKey) Key() any                                    { return k.key }
func (k *signingKey) ID() string                                  { return k.id }

// publicKey is the key as the key set publishes it.
type publicKey struct{ k *signingKey }

func (p publicKey) ID() string                         { return p.k.id }
func (p publicKey) Algorithm() jose.SignatureAlgorithm { return p.k.alg }
func (p publicKey) Use() string                        { return "sig" }
func (p publicKey) Key() any                           { return p.k.key.Public() }
