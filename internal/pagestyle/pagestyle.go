// Package pagestyle is the stylesheet the gateway's HTML pages share (the
// tool documentation page and the approval pages), and the hash by which a
// page's Content-Security-Policy allows exactly its own inline stylesheet
// and nothing else; and how the pages show text that callers and providers
// supplied: every invisible character as its escape (Visible), and every
// such value isolated (in <bdi>, <code>, <strong> or a tag, which the
// stylesheet isolates), so that one value cannot reorder the text around it.
package pagestyle

import (
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
)

// CSS is the pages' common stylesheet, ours, inlined in each page so that
// it needs no other request. A page may append rules of its own.
//
//go:embed page.css
var CSS string

// Source is the CSP source expression that allows the inline stylesheet
// css: 'sha256-<base64 of its SHA-256>'.
func Source(css string) string {
	sum := sha256.Sum256([]byte(css))
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}
