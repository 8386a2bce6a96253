package toolgatetype

import "time"

// QuoteResult is the answer to a quote: the amounts, the tool, the policy
// for this caller and the spend-control decision. Check Policy.Callable,
// Policy.Approval and Controls.Approved before calling.
type QuoteResult struct {
	Quote    QuoteInfo `json:"quote"`
	Tool     ToolRef   `json:"tool"`
	Policy   Policy    `json:"policy"`
	Controls Controls  `json:"controls"`
}

// QuoteInfo is the quote itself.
type QuoteInfo struct {
	ID        string    `json:"id"`
	PriceUSD  string    `json:"priceUsd"`
	FeeUSD    string    `json:"feeUsd"`
	TotalUSD  string    `json:"totalUsd"`
	ExpiresAt time.Time `json:"expiresAt"`
	// ManifestDigest is the digest an approval must name; nil for a tool
	// with no immutable version.
	ManifestDigest *string `json:"manifestDigest"`
}

// ToolRef names a tool in quotes and executions.
type ToolRef struct {
	ID   string `json:"id"`
	Slug string `json:"slug"`
	Name string `json:"name"`
}
