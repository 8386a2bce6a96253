package storage

import "bytes"

// WithReceipt is the response a finished execution's readers get: the
// stored response, a JSON object, with signed (its latest receipt) as its
// last member, "receipt". A store keeps a finished execution's signed
// receipt once, in its receipts row, and its response without it, and
// gives every read (GetExecution, GetIdempotency, a replay, the execution
// ResolveExecution returns) the two joined by this function: the receipt
// is about a KiB, which stored twice doubled what each finish wrote.
//
// A response that already ends with signed as its "receipt" member (one
// stored whole before receipts were kept once) is returned as it is, so
// rows written either way read back the same. A response that is not an
// object is returned as it is, and so is any response when signed is nil.
func WithReceipt(response, signed []byte) []byte {
	if signed == nil {
		return response
	}
	end := bytes.LastIndexByte(response, '}')
	if end < 0 {
		return response
	}
	head := response[:end]
	if bytes.HasSuffix(head, signed) && bytes.HasSuffix(head[:len(head)-len(signed)], []byte(`"receipt":`)) {
		return response
	}
	out := make([]byte, 0, len(response)+len(signed)+len(`,"receipt":`))
	out = append(out, head...)
	if len(bytes.TrimSpace(response[1:end])) > 0 { // an empty object takes no comma
		out = append(out, ',')
	}
	out = append(out, `"receipt":`...)
	out = append(out, signed...)
	return append(out, response[end:]...)
}
