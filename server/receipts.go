package server

import (
	"encoding/base64"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/toolgate/toolgate/receipt"
	"github.com/toolgate/toolgate/toolgatetype"
)

// Receipts is the config's "receipts": the key receipts are signed with,
// and the retired keys older receipts were signed with.
type Receipts struct {
	SigningKeyFile string // PKCS#8 PEM, absolute once loaded
	KeyID          string // "" names the key by its JWK thumbprint
	Retired        []RetiredReceiptKey
}

// RetiredReceiptKey is a key that signed receipts before a rotation: its
// public half (or the whole key) in PEM, and its key id.
type RetiredReceiptKey struct {
	KeyID         string // "" names the key by its JWK thumbprint
	PublicKeyFile string
}

// receiptsJSON is "receipts".
type receiptsJSON struct {
	SigningKeyFile *string `json:"signingKeyFile"`
	KeyID          *string `json:"keyId"`
	RetiredKeys    []struct {
		KeyID         *string `json:"keyId"`
		PublicKeyFile *string `json:"publicKeyFile"`
	} `json:"retiredKeys"`
}

// receipts checks "receipts".
func (in *receiptsJSON) receipts(path string) (*Receipts, error) {
	r := &Receipts{}
	if in.SigningKeyFile != nil {
		if r.SigningKeyFile = *in.SigningKeyFile; strings.TrimSpace(r.SigningKeyFile) == "" {
			return nil, errorf(at(path, "signingKeyFile"), "must be the path of a PKCS#8 PEM Ed25519 key (openssl genpkey -algorithm ed25519 -out receipts.pem)")
		}
	}
	if in.KeyID != nil {
		if r.KeyID = *in.KeyID; strings.TrimSpace(r.KeyID) == "" {
			return nil, errorf(at(path, "keyId"), "must not be empty: leave it out to name the key by its thumbprint")
		}
	}
	if in.RetiredKeys != nil {
		r.Retired = make([]RetiredReceiptKey, 0, len(in.RetiredKeys))
	}
	for i, k := range in.RetiredKeys {
		var rk RetiredReceiptKey
		if k.KeyID != nil {
			rk.KeyID = *k.KeyID
		}
		if k.PublicKeyFile != nil {
			rk.PublicKeyFile = *k.PublicKeyFile
		}
		if strings.TrimSpace(rk.PublicKeyFile) == "" {
			return nil, errorf(index(at(path, "retiredKeys"), i), `needs "publicKeyFile": the retired key's public half in PEM`)
		}
		r.Retired = append(r.Retired, rk)
	}
	if r.SigningKeyFile == "" {
		return nil, errorf(path, `needs "signingKeyFile": without it, leave "receipts" out and a development key is generated at start`)
	}
	return r, nil
}

// resolveReceiptPaths makes the key files' paths absolute, from the config
// file's directory dir.
func resolveReceiptPaths(cfg *Config, dir string) {
	if cfg.Receipts == nil {
		return
	}
	abs := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
	cfg.Receipts.SigningKeyFile = abs(cfg.Receipts.SigningKeyFile)
	for i := range cfg.Receipts.Retired {
		cfg.Receipts.Retired[i].PublicKeyFile = abs(cfg.Receipts.Retired[i].PublicKeyFile)
	}
}

// receiptKeys loads the configured keys. With none configured it generates
// a development key and returns it as generated too, for the server to log
// once it has started (a server that cannot start has nothing to say about
// its receipts). A signing key others can read is refused: whoever reads it
// can sign receipts in the gateway's name.
func receiptKeys(r *Receipts) (keys *receipt.Keys, generated *receipt.Signer, err error) {
	if r == nil {
		signer, err := receipt.GenerateSigner()
		if err != nil {
			return nil, nil, err
		}
		return &receipt.Keys{Signer: signer}, signer, nil
	}
	keys, err = loadReceiptKeys(r)
	return keys, nil, err
}

// logGeneratedReceiptKey says, once the server runs, that its receipts are
// signed with a development key, and which: its receipts verify only while
// this public key is kept.
func logGeneratedReceiptKey(log *slog.Logger, signer *receipt.Signer) {
	if signer == nil {
		return
	}
	log.Warn("receipts are signed with a key generated at start, for development only: configure \"receipts\" so that they verify after a restart",
		"keyId", signer.KeyID(), "publicKey", base64.RawURLEncoding.EncodeToString(signer.PublicKey()))
}

// loadReceiptKeys reads the configured signing key and retired keys.
func loadReceiptKeys(r *Receipts) (*receipt.Keys, error) {
	info, err := os.Stat(r.SigningKeyFile)
	if err != nil {
		return nil, fmt.Errorf("receipts: signingKeyFile: %w", err)
	}
	if perm := info.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("receipts: signingKeyFile %s can be read by others (mode %04o): chmod 600 it", r.SigningKeyFile, perm)
	}
	pemText, err := os.ReadFile(r.SigningKeyFile)
	if err != nil {
		return nil, fmt.Errorf("receipts: signingKeyFile: %w", err)
	}
	signer, err := receipt.LoadSigner(pemText, r.KeyID)
	if err != nil {
		return nil, fmt.Errorf("receipts: signingKeyFile %s: %w", r.SigningKeyFile, err)
	}
	keys := &receipt.Keys{Signer: signer}
	for _, k := range r.Retired {
		pemText, err := os.ReadFile(k.PublicKeyFile)
		if err != nil {
			return nil, fmt.Errorf("receipts: retiredKeys: %w", err)
		}
		pub, err := receipt.PublicKeyFromPEM(pemText)
		if err != nil {
			return nil, fmt.Errorf("receipts: retiredKeys %s: %w", k.PublicKeyFile, err)
		}
		id := k.KeyID
		if id == "" {
			id = receipt.Thumbprint(pub)
		}
		keys.Retired = append(keys.Retired, receipt.JWK(pub, id, toolgatetype.ReceiptKeyRetired))
	}
	return keys, nil
}
