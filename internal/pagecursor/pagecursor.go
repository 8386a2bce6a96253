// Package pagecursor makes and reads the cursors of execution listings.
//
// A listing cursor is the position of the last item of a page, with a
// check binding it to the listing it came from: who listed (the caller's
// principal, or later an approver's principals) and with which filters.
//
// It needs no secret. Every listing reads only its own caller's
// executions, so no cursor, however made, can reach another's; the check
// turns a cursor that was altered, cut short, or taken from another
// caller's or another filter's listing into a clear 400 rather than a page
// from somewhere unexpected. Gateways sharing a store read each other's
// cursors, so a listing can be paged across instances.
package pagecursor

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"time"

	"github.com/google/uuid"
	"github.com/toolgate/toolgate/storage"
)

const (
	cursorVersion = 1
	cursorCheck   = 12 // bytes of SHA-256 kept as the check
	cursorLen     = 1 + 8 + 16 + cursorCheck
)

// Encode makes the cursor of position p in the listing bound to binding.
func Encode(p storage.ExecutionPosition, binding []byte) string {
	b := make([]byte, 0, cursorLen)
	b = append(b, cursorVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(p.CreatedAt.UnixNano()))
	b = append(b, p.ID[:]...)
	b = append(b, cursorSum(b, binding)...)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Decode reads a cursor made by Encode for the same binding.
func Decode(s string, binding []byte) (storage.ExecutionPosition, bool) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != cursorLen || b[0] != cursorVersion {
		return storage.ExecutionPosition{}, false
	}
	body, check := b[:cursorLen-cursorCheck], b[cursorLen-cursorCheck:]
	if !bytes.Equal(check, cursorSum(body, binding)) {
		return storage.ExecutionPosition{}, false
	}
	var p storage.ExecutionPosition
	p.CreatedAt = time.Unix(0, int64(binary.BigEndian.Uint64(body[1:9]))).UTC()
	p.ID = uuid.UUID(body[9:25])
	return p, true
}

func cursorSum(body, binding []byte) []byte {
	h := sha256.New()
	h.Write([]byte("toolgate executions cursor\x00"))
	h.Write(binding)
	h.Write([]byte{0})
	h.Write(body)
	return h.Sum(nil)[:cursorCheck]
}
