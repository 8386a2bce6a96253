package rules

import "time"

// Principal is the caller as a rule sees it: `principal` in CEL.
type Principal struct {
	ID string `cel:"id"`
	// Groups is the access token's groups claim; empty for an API key.
	Groups []string `cel:"groups"`
	// Claims are the access token's claims; empty for an API key.
	Claims map[string]any `cel:"claims"`
	// Budgets are the ids of the budgets the caller counts in, ancestors
	// included.
	Budgets []string `cel:"budgets"`
	// ApprovalMode is "caller" or "approver".
	ApprovalMode string `cel:"approvalMode"`
}

// Tool is the tool called as a rule sees it: `tool` in CEL.
type Tool struct {
	Slug string `cel:"slug"`
	Name string `cel:"name"`
	// Provider is the provider's id.
	Provider string `cel:"provider"`
	// Server is the name of the upstream MCP server that serves the tool,
	// "" for every other.
	Server string `cel:"server"`
	// Risk is the tool's risk level (low, medium, high, critical,
	// unknown).
	Risk string   `cel:"risk"`
	Tags []string `cel:"tags"`
	// Capabilities are the tool's normalized capabilities by their JSON
	// names (readOnly, spendsMoney, ...).
	Capabilities map[string]any `cel:"capabilities"`
	PriceUSD     float64        `cel:"priceUsd"`
}

// Cost is what the call costs as a rule sees it: `call` in CEL.
type Cost struct {
	PriceUSD float64 `cel:"priceUsd"`
	FeeUSD   float64 `cel:"feeUsd"`
	TotalUSD float64 `cel:"totalUsd"`
}

// Subject is what a decision is about: one call, or a quote of one.
type Subject struct {
	Principal *Principal
	Tool      *Tool
	// Input is the call's canonical input decoded (numbers as float64);
	// InputKnown false, as for a quote that carries none, leaves it
	// unknown: rules that depend on it are pending.
	Input      map[string]any
	InputKnown bool
	Cost       Cost
	Now        time.Time
}
