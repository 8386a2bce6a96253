package main

import (
	"crypto/sha256"
	"encoding/hex"
)

// webhookSecret is a distinctive, valid secret: nothing may ever print it.
const webhookSecret = "whsec_" + "c2VjcmV0LW5vLWxvZy1tYXktZXZlci1ob2xkLTEyMzQ1Ng=="

func sha256Hex(s string) string {
	d := sha256.Sum256([]byte(s))
	return hex.EncodeToString(d[:])
}
