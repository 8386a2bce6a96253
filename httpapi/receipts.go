package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/toolgate/toolgate/internal/httpx"
	"github.com/toolgate/toolgate/toolgatetype"
)

// ReceiptsPath is where a chain of receipts is read, relative to where the
// API is mounted.
const ReceiptsPath = "/v1/receipts"

// ReceiptKeysPath is where the public keys of receipts are published,
// relative to where the API is mounted.
const ReceiptKeysPath = "/.well-known/toolgate-receipt-keys"

// DefaultReceiptLimit is how many receipts GET /v1/receipts answers with
// when limit is not given.
const DefaultReceiptLimit = 100

// receiptKeysMaxAge is how long a client may keep the key set: a key
// rotated in is served for this long before every client sees it, and a
// retired key stays listed, so verifying never depends on it.
const receiptKeysMaxAge = "public, max-age=300"

// listReceipts serves GET /v1/receipts: the caller's chain of receipts, or
// with an approver key that of the principal named by ?principal=ID, which
// the approver must approve for, in seq order from after, a page at a
// time. Each receipt is answered as it was signed, byte for byte.
func (h *Handler) listReceipts(w http.ResponseWriter, r *http.Request) {
	approver := approverOf(r)
	names := []string{"after", "limit"}
	if approver != "" {
		names = append(names, "principal")
	}
	q, err := queryOf(r, names...)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	var after int64
	if s, ok := q["after"]; ok {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			h.writeError(w, r, paramError("after", "after must be a whole number, 0 or more: the seq of the last receipt read"))
			return
		}
		after = n
	}
	limit := DefaultReceiptLimit
	if s, ok := q["limit"]; ok {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > toolgatetype.MaxReceiptPage {
			h.writeError(w, r, paramError("limit", "limit must be a whole number from 1 to %d", toolgatetype.MaxReceiptPage))
			return
		}
		limit = n
	}
	// A caller reads its own chain: a principal= it sends is not read, as
	// on the other listings. An approver names the principal, which it
	// must approve for.
	var page toolgatetype.ReceiptPage
	switch principal := q["principal"]; {
	case approver == "":
		page, err = h.gw.Receipts(r.Context(), principalOf(r), after, limit)
	case principal == "":
		err = paramError("principal", "an approver names the principal whose receipts these are: ?principal=ID")
	default:
		page, err = h.gw.ReceiptsFor(r.Context(), approver, principal, after, limit)
		if toolgatetype.IsCode(err, toolgatetype.CodeInvalidRequest) {
			err = paramError("principal", "principal does not name a principal")
		}
	}
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	body, err := receiptPageJSON(page)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	httpx.WriteRaw(w, http.StatusOK, body)
}

// receiptPageJSON writes a page of receipts with each receipt as it was
// signed: encoding/json would escape <, > and & in them, and the bytes of
// a receipt are what its signature and its successor's prev are checked
// against by whoever keeps them.
func receiptPageJSON(p toolgatetype.ReceiptPage) ([]byte, error) {
	n := len(`{"receipts":[],"next":}`) + 20
	for _, r := range p.Receipts {
		n += len(r) + 1
	}
	b := make([]byte, 0, n)
	b = append(b, `{"receipts":[`...)
	for i, r := range p.Receipts {
		if !json.Valid(r) {
			return nil, errors.New("httpapi: a stored receipt is not JSON")
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, r...)
	}
	b = append(b, ']')
	if p.Next != nil {
		b = append(b, `,"next":`...)
		b = strconv.AppendInt(b, *p.Next, 10)
	}
	return append(b, '}'), nil
}

// receiptKeys serves GET /.well-known/toolgate-receipt-keys: the public
// keys receipts verify with, to anyone.
func (h *Handler) receiptKeys(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Cache-Control", receiptKeysMaxAge)
	httpx.WriteJSON(w, http.StatusOK, h.gw.ReceiptKeys())
}
