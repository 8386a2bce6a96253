package sealing

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
)

// KeySize is the length of a key in bytes.
const KeySize = 32

// version is the first byte of every sealed value, so that a later format
// can be told apart.
const version byte = 1

// ErrOpen is returned by Open for a value that none of the keys opens: not
// sealed by this fleet, altered, sealed for other additional data, or
// sealed with a key since dropped. It says no more, on purpose.
var ErrOpen = errors.New("sealing: the value cannot be opened")

// Keys seals with its first key and opens with any. Safe for concurrent
// use.
type Keys struct {
	aeads []cipher.AEAD
}

// New returns Keys over keys, each KeySize bytes; the first seals. The
// keys are not kept: only the ciphers made from them are.
func New(keys ...[]byte) (*Keys, error) {
	if len(keys) == 0 {
		return nil, errors.New("sealing: no key")
	}
	k := &Keys{}
	for i, key := range keys {
		if len(key) != KeySize {
			// The key is not quoted: it would end up in a log.
			return nil, fmt.Errorf("sealing: key %d is %d bytes, not %d", i+1, len(key), KeySize)
		}
		block, err := aes.NewCipher(key)
		if err != nil {
			return nil, fmt.Errorf("sealing: key %d: %w", i+1, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("sealing: key %d: %w", i+1, err)
		}
		k.aeads = append(k.aeads, aead)
	}
	return k, nil
}

// GenerateKey returns a new random key.
func GenerateKey() []byte {
	key := make([]byte, KeySize)
	_, _ = rand.Read(key) // never fails (crypto/rand)
	return key
}

// ParseKey reads a key written as base64url (padded or not) of KeySize
// random bytes, as the config gives it. Its error never quotes s.
func ParseKey(s string) ([]byte, error) {
	key, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		key, err = base64.URLEncoding.DecodeString(s)
	}
	if err != nil {
		return nil, errors.New("sealing: a key must be base64url")
	}
	if len(key) != KeySize {
		return nil, fmt.Errorf("sealing: a key must be %d bytes, base64url (this one is %d)", KeySize, len(key))
	}
	return key, nil
}

// EncodeKey writes key as ParseKey reads it.
func EncodeKey(key []byte) string { return base64.RawURLEncoding.EncodeToString(key) }

// Seal seals plaintext with the first key, bound to additionalData: Open
// opens it only with the same additionalData. Each seal draws a random
// nonce, so sealing the same plaintext twice gives different values.
func (k *Keys) Seal(plaintext, additionalData []byte) []byte {
	aead := k.aeads[0]
	out := make([]byte, 1+aead.NonceSize(), 1+aead.NonceSize()+len(plaintext)+aead.Overhead())
	out[0] = version
	_, _ = rand.Read(out[1:]) // never fails (crypto/rand)
	return aead.Seal(out, out[1:], plaintext, additionalData)
}

// Open opens a value Seal sealed with any of the keys and the same
// additionalData, or returns ErrOpen.
func (k *Keys) Open(sealed, additionalData []byte) ([]byte, error) {
	if len(sealed) < 1 || sealed[0] != version {
		return nil, ErrOpen
	}
	for _, aead := range k.aeads {
		n := aead.NonceSize()
		if len(sealed) < 1+n+aead.Overhead() {
			return nil, ErrOpen
		}
		if out, err := aead.Open(nil, sealed[1:1+n], sealed[1+n:], additionalData); err == nil {
			return out, nil
		}
	}
	return nil, ErrOpen
}

// SealString is Seal written as base64url with no padding, for a value
// that travels in JSON, a URL or a cookie.
func (k *Keys) SealString(plaintext, additionalData []byte) string {
	return base64.RawURLEncoding.EncodeToString(k.Seal(plaintext, additionalData))
}

// OpenString opens what SealString sealed, or returns ErrOpen.
func (k *Keys) OpenString(sealed string, additionalData []byte) ([]byte, error) {
	raw, err := base64.RawURLEncoding.DecodeString(sealed)
	if err != nil {
		return nil, ErrOpen
	}
	return k.Open(raw, additionalData)
}

// String shows how many keys there are, never a key.
func (k *Keys) String() string { return fmt.Sprintf("sealing.Keys{%d}", len(k.aeads)) }

// GoString is String, for %#v.
func (k *Keys) GoString() string { return k.String() }

// Format is String for every verb, so that no verb reaches the ciphers'
// key schedules.
func (k *Keys) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(k.String())) }

// LogValue is String, for log/slog.
func (k *Keys) LogValue() slog.Value { return slog.StringValue(k.String()) }
