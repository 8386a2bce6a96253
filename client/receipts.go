package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/toolgate/toolgate/toolgatetype"
)

// The receipts' routes, from the API's root.
const (
	receiptsPath    = "/v1/receipts"
	receiptKeysPath = "/.well-known/toolgate-receipt-keys"
)

// Receipts returns a page of this principal's chain of receipts, as
// toolgate.Gateway.Receipts does: up to limit receipts with seq above
// after, in seq order, each exactly as the gateway signed it, and the
// after of the next page in Next (nil on the last). after 0 reads from the
// start; limit 0 means the gateway's default (100), and at most 1000 are
// given at once. A value the gateway refuses is invalid_request, its
// Parameter naming it.
//
// Keep the receipts' bytes as they are: they verify, offline, with the
// keys ReceiptKeys returns (package github.com/toolgate/toolgate/receipt).
//
//	var after int64
//	for {
//		p, err := c.Receipts(ctx, after, 0)
//		if err != nil { ... }
//		keep(p.Receipts)
//		if p.Next == nil { break }
//		after = *p.Next
//	}
func (c *Client) Receipts(ctx context.Context, after int64, limit int) (toolgatetype.ReceiptPage, error) {
	return c.receipts(ctx, "", after, limit)
}

// PrincipalReceipts returns a page of principal's chain of receipts, for a
// client holding an approver key: principal must be one the approver
// approves for, and any other is not_found, whether or not it exists.
// after and limit are as for Receipts. A caller's key reads only its own
// chain: given one, PrincipalReceipts refuses (approver_required) the
// page of another principal the gateway answers with.
func (c *Client) PrincipalReceipts(ctx context.Context, principal string, after int64, limit int) (toolgatetype.ReceiptPage, error) {
	if principal == "" {
		return toolgatetype.ReceiptPage{}, &toolgatetype.Error{Code: toolgatetype.CodeInvalidRequest,
			Message: "name the principal whose receipts to read", Parameter: "principal"}
	}
	return c.receipts(ctx, principal, after, limit)
}

func (c *Client) receipts(ctx context.Context, principal string, after int64, limit int) (toolgatetype.ReceiptPage, error) {
	q := url.Values{}
	if after != 0 {
		q.Set("after", strconv.FormatInt(after, 10))
	}
	if limit != 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if principal != "" {
		q.Set("principal", principal)
	}
	r := request{method: http.MethodGet, path: receiptsPath, query: q}
	page, err := doJSON[toolgatetype.ReceiptPage](ctx, c, r)
	if err != nil {
		return toolgatetype.ReceiptPage{}, err
	}
	if page.Receipts == nil {
		page.Receipts = []json.RawMessage{}
	}
	if principal != "" {
		// The gateway does not read principal= from a caller's key: it
		// answers with the caller's own chain, which is not what was asked.
		for _, raw := range page.Receipts {
			var of struct {
				Receipt struct {
					Principal string `json:"principal"`
				} `json:"receipt"`
			}
			if err := json.Unmarshal(raw, &of); err != nil {
				return toolgatetype.ReceiptPage{}, c.notTheGateways(r, http.StatusOK, err)
			}
			if of.Receipt.Principal != principal {
				return toolgatetype.ReceiptPage{}, &toolgatetype.Error{Code: toolgatetype.CodeApproverRequired,
					Message: fmt.Sprintf("the receipts of %q are read with an approver key; this client's key reads only its own (Receipts)", principal)}
			}
		}
	}
	return *page, nil
}

// ReceiptKeys returns the public keys receipts are signed with, the
// current one and those retired, as JSON Web Keys. The key set is public:
// no API key is needed.
func (c *Client) ReceiptKeys(ctx context.Context) (toolgatetype.ReceiptKeys, error) {
	keys, err := doJSON[toolgatetype.ReceiptKeys](ctx, c, request{method: http.MethodGet, path: receiptKeysPath})
	if err != nil {
		return toolgatetype.ReceiptKeys{}, err
	}
	return *keys, nil
}

// EachReceipt calls each with every receipt of a chain, in seq order,
// exactly as the gateway signed it, reading it page by page: this client's
// principal's chain (Receipts) when principal is "", else principal's
// (PrincipalReceipts). It stops at the first error, each's included, and
// returns it.
func (c *Client) EachReceipt(ctx context.Context, principal string, each func(signed []byte) error) error {
	var after int64
	for {
		var page toolgatetype.ReceiptPage
		var err error
		if principal != "" {
			page, err = c.PrincipalReceipts(ctx, principal, after, 1000)
		} else {
			page, err = c.Receipts(ctx, after, 1000)
		}
		if err != nil {
			return err
		}
		for _, r := range page.Receipts {
			if err := each(r); err != nil {
				return err
			}
		}
		if page.Next == nil {
			return nil
		}
		after = *page.Next
	}
}
