package toolgatetype

import (
	"context"
	"slices"
	"time"
)

// The types below describe what a gateway's Config takes: the sources it
// asks and the limits it keeps. They live here so that an operator's own
// implementations need not import the engine.

// Clock tells the gateway the time. Quote expiry, idempotency leases, spend
// windows and rate limits all read it, so tests can drive them with a fake
// clock (toolgatetest.FakeClock) instead of sleeping.
type Clock interface {
	Now() time.Time
}

// SpendControlsSource supplies the operator's spend controls of a principal
// (Config.SpendControls). Fields left nil fall back to the defaults: $25 a
// call, $100 a UTC day, $1000 a UTC month, 60 calls a minute, 1000 an hour.
type SpendControlsSource interface {
	SpendControls(ctx context.Context, principal string) (SpendControls, error)
}

// StaticSpendControls is a SpendControlsSource from a fixed map by principal.
type StaticSpendControls map[string]SpendControls

// SpendControls returns the principal's entry, or none.
func (s StaticSpendControls) SpendControls(_ context.Context, principal string) (SpendControls, error) {
	return s[principal], nil
}

// ApproverDirectory says who approves for whom (Config.Approvers). It is
// asked on every quote and call, so it should answer from memory.
type ApproverDirectory interface {
	// ApprovalMode returns the principal's approval mode; "" means
	// ApprovalModeCaller, and a mode the gateway does not know counts as
	// ApprovalModeApprover, so it loosens nothing.
	ApprovalMode(ctx context.Context, principal string) (ApprovalMode, error)
	// ApprovedPrincipals returns the principals approver approves for: none
	// for an approver it does not know.
	ApprovedPrincipals(ctx context.Context, approver string) ([]string, error)
}

// StaticApprovers is an ApproverDirectory from fixed maps.
type StaticApprovers struct {
	// Modes is each principal's approval mode; a principal absent is in
	// caller mode.
	Modes map[string]ApprovalMode
	// Approvers maps an approver's id to the principals it approves for.
	Approvers map[string][]string
}

// ApprovalMode returns the principal's entry in Modes.
func (s StaticApprovers) ApprovalMode(_ context.Context, principal string) (ApprovalMode, error) {
	return s.Modes[principal], nil
}

// ApprovedPrincipals returns the approver's entry in Approvers.
func (s StaticApprovers) ApprovedPrincipals(_ context.Context, approver string) ([]string, error) {
	return slices.Clone(s.Approvers[approver]), nil
}

// ApprovalNotifier is told of each approval event once the store has it
// (Config.ApprovalNotifier). NotifyApproval runs on the request's goroutine
// and must not block.
type ApprovalNotifier interface {
	NotifyApproval(ctx context.Context, ev ApprovalEvent)
}

// RequestLimit caps how many requests of one kind a principal may make in
// a window, which begins with the first and lasts Window.
type RequestLimit struct {
	// Max is the most a window holds; 0 means the default, and negative
	// means no limit.
	Max int
	// Window is the window's length; 0 means the default.
	Window time.Duration
}
