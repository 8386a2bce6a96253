package toolgate

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/toolgate/toolgate/internal/ruling"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// RiskOf classifies normalized capabilities.
func RiskOf(c toolgatetype.NormalizedCapabilities) toolgatetype.RiskLevel {
	switch {
	case !c.Declared:
		return toolgatetype.RiskUnknown
	case c.ExecutesCode || c.SpendsMoney || c.Destructive:
		return toolgatetype.RiskCritical
	case c.SendsMessages || c.WritesExternalData || c.ReadsPrivateData ||
		c.RequiresUserCredential || c.DataRetention == registry.RetentionStored:
		return toolgatetype.RiskHigh
	case c.OpenWorld || c.SeesUntrustedContent || !c.ReadOnly ||
		c.DataRetention == registry.RetentionUnknown:
		return toolgatetype.RiskMedium
	default:
		return toolgatetype.RiskLow
	}
}

// EvaluatePolicy returns the policy of a tool version for any caller, before
// standing approvals.
func EvaluatePolicy(v *registry.Version) toolgatetype.Policy {
	t := v.Tool
	paid := t.Pricing.Paid()
	endpointVerified := t.Endpoint.Verified
	paymentVerified := t.Provider.PaymentVerified
	hasVersion := v.Digest != ""

	reasons := []string{}
	if !hasVersion {
		reasons = append(reasons, toolgatetype.ReasonNoImmutableVersion)
	}
	if !endpointVerified {
		reasons = append(reasons, toolgatetype.ReasonEndpointNotVerified)
	}
	if !v.Capabilities.Declared {
		reasons = append(reasons, toolgatetype.ReasonCapabilitiesUndeclared)
	}
	if paid && !paymentVerified {
		reasons = append(reasons, toolgatetype.ReasonPaymentNotVerified)
	}
	if paid && !endpointVerified {
		reasons = append(reasons, toolgatetype.ReasonPaidEndpointUnverified)
	}
	unpinned := false
	if u := t.Upstream; u != nil && u.PinRequired && u.PinnedDigest != v.Digest {
		// The operator reviews each definition an upstream MCP server
		// serves before it can be called; one served since is not that one.
		unpinned = true
		if u.PinnedDigest == "" {
			reasons = append(reasons, toolgatetype.ReasonUpstreamNotPinned)
		} else {
			reasons = append(reasons, toolgatetype.ReasonUpstreamPinChanged)
		}
	}

	risk := RiskOf(v.Capabilities)
	var requirement toolgatetype.Requirement
	switch {
	case !hasVersion || unpinned || (paid && (!endpointVerified || !paymentVerified)):
		requirement = toolgatetype.RequirementBlocked
	case !endpointVerified || risk == toolgatetype.RiskUnknown:
		requirement = toolgatetype.RequirementExplicitUnverified
	case risk == toolgatetype.RiskHigh || risk == toolgatetype.RiskCritical:
		requirement = toolgatetype.RequirementPerCall
	case risk == toolgatetype.RiskMedium:
		requirement = toolgatetype.RequirementFirstUse
	default:
		requirement = toolgatetype.RequirementCoveredByUserPolicy
	}

	var digest *string
	if hasVersion {
		d := v.Digest
		digest = &d
	}
	return toolgatetype.Policy{
		Callable:             requirement != toolgatetype.RequirementBlocked,
		MonetizationEligible: !paid || (endpointVerified && paymentVerified),
		EligibleForAutoCall:  requirement == toolgatetype.RequirementCoveredByUserPolicy,
		RiskLevel:            risk,
		Approval:             toolgatetype.ApprovalPolicy{Requirement: requirement, ManifestDigest: digest},
		Reasons:              reasons,
	}
}

// forCaller applies a caller's standing approval (nil when none) to the
// tool's policy. A standing approval never unblocks a blocked tool, and one
// given for another digest is stale and ignored. totalUSDIsZero says whether
// the call at hand costs nothing, for ApprovalAskChargedCalls.
func forCaller(p toolgatetype.Policy, a *storage.Approval, totalIsZero bool) toolgatetype.Policy {
	if a == nil || p.Approval.ManifestDigest == nil {
		return p
	}
	current := *p.Approval.ManifestDigest
	standing := &toolgatetype.StandingApproval{Mode: a.Mode, ManifestDigest: a.ManifestDigest, Stale: a.ManifestDigest != current}
	p.Approval.Standing = standing
	if standing.Stale || p.Approval.Requirement == toolgatetype.RequirementBlocked {
		return p
	}
	covered := false
	switch a.Mode {
	case toolgatetype.ApprovalNeverAsk:
		covered = true
	case toolgatetype.ApprovalAskChargedCalls:
		covered = totalIsZero
	case toolgatetype.ApprovalFirstUse:
		covered = p.Approval.Requirement == toolgatetype.RequirementFirstUse
	case toolgatetype.ApprovalAskEveryCall:
		// The caller wants to be asked even where the policy would not.
		if p.Approval.Requirement == toolgatetype.RequirementCoveredByUserPolicy || p.Approval.Requirement == toolgatetype.RequirementFirstUse {
			p.Approval.Requirement = toolgatetype.RequirementPerCall
		}
	}
	if covered {
		p.Approval.Requirement = toolgatetype.RequirementCoveredByUserPolicy
	}
	p.EligibleForAutoCall = p.Approval.Requirement == toolgatetype.RequirementCoveredByUserPolicy
	return p
}

// needsApproval reports whether a call under this policy must carry an
// explicit approval of the manifest digest.
func needsApproval(p toolgatetype.Policy) bool {
	return p.Approval.Requirement != toolgatetype.RequirementCoveredByUserPolicy
}

// explain adds to e what the policy required and why.
// blockedError refuses a call of a tool its policy blocks. The message
// names the reasons and, when the operator can lift them by vouching for
// the provider, the config's trust field that does it and the value
// (a manifest cannot vouch for itself).
func blockedError(v *registry.Version, p toolgatetype.Policy) *toolgatetype.Error {
	return explain(p, newError(toolgatetype.CodeToolBlocked, "%s cannot be called: %s%s",
		v.Tool.Slug, strings.Join(p.Reasons, "; "), trustHint(v)))
}

// trustHint is what unblocks a paid tool whose provider or endpoint the
// operator has not verified: `"trust": {"<slug>": {"paymentVerified":
// true, ...}}` in the server's config, Registry.SetTrust in Go. "" when
// trust is not what blocks it.
func trustHint(v *registry.Version) string {
	t := v.Tool
	if !t.Pricing.Paid() {
		return ""
	}
	var fields []string
	if !t.Provider.PaymentVerified {
		fields = append(fields, `"paymentVerified": true`)
	}
	if !t.Endpoint.Verified {
		fields = append(fields, `"endpointVerified": true`)
	}
	if len(fields) == 0 {
		return ""
	}
	return fmt.Sprintf(`. The operator unblocks it by vouching for the provider in the config's trust field: "trust": {%q: {%s}} (Registry.SetTrust in Go)`,
		t.Slug, strings.Join(fields, ", "))
}

func explain(p toolgatetype.Policy, e *toolgatetype.Error) *toolgatetype.Error {
	e.ApprovalRequirement = p.Approval.Requirement
	e.ManifestDigest = p.Approval.ManifestDigest
	e.Reasons = p.Reasons
	return e
}

// checkPolicy applies the policy to a call: the tool must be callable, and
// the call must carry the approval its requirement asks for, of this very
// digest. read holds the caller's standing approval, when it was read with
// the call's other reads, and the grant the call carries.
//
// In caller mode the digest sent is the approval. In approver mode it
// approves nothing: only a grant, or a standing approval an approver set,
// does. A grant approves in either mode, and
// is checked whenever one is sent, even where no approval is needed, just
// as a digest for another version is refused there.
func (g *Gateway) checkPolicy(ctx context.Context, c *call, q storage.Quote, read storage.ReadResult, mode toolgatetype.ApprovalMode, now time.Time) (toolgatetype.Policy, error) {
	v, approval := c.tool, c.req.ApprovalDigest
	policy := EvaluatePolicy(v)
	switch {
	case c.quoted != nil:
		policy = c.quoted.adm.policy // the quote's, with the standing approval
	case g.approvalsFromStore && settles(c, mode):
		// The call carries what approves this very digest, which is all any
		// approval requirement asks, and a standing approval changes only
		// the requirement, never whether the tool is callable: it cannot
		// change the outcome, so it was not read. (The one later use of the
		// policy, rememberFirstUse, reads the standing approval itself and
		// leaves it be whenever it would have changed a first_use
		// requirement.)
	case g.approvalsFromStore:
		policy = forCaller(policy, standingFor(read.Approval, mode), q.TotalUSD.IsZero())
	default:
		external, err := g.externalApproval(ctx, c.principal, v)
		if err != nil {
			return policy, internalError(err)
		}
		policy = forCaller(policy, standingFor(external, mode), q.TotalUSD.IsZero())
	}
	if c.quoted == nil {
		policy = ruling.Apply(policy, c.ruled)
	}
	if !policy.Callable {
		return policy, blockedError(v, policy)
	}
	switch {
	case approval != "" && approval != v.Digest:
		// Even where no approval is needed, one for another digest means the
		// user approved something else.
		return policy, explain(policy, newError(toolgatetype.CodeApprovalMismatch, "the approval names another manifest digest than %s's current version", v.Tool.Slug))
	case c.grant != uuid.Nil:
		if err := checkGrant(c, read.Grant, now); err != nil {
			return policy, err
		}
		return policy, c.ruled.GrantedBy(read.Grant)
	case !needsApproval(policy):
		return policy, nil
	case mode == toolgatetype.ApprovalModeApprover:
		e := explain(policy, newError(toolgatetype.CodeApprovalRequired, "calling %s requires an approver's approval (%s%s): create an approval request for this quote and input, and send its id as approval.grantId once approved", v.Tool.Slug, policy.Approval.Requirement, c.ruled.AskedBy()))
		e.GrantRequired = true
		return policy, e
	case approval == "":
		return policy, explain(policy, newError(toolgatetype.CodeApprovalRequired, "calling %s requires approval of its manifest digest (%s)", v.Tool.Slug, policy.Approval.Requirement))
	}
	return policy, nil
}

// settles reports whether what the call carries approves it whatever the
// standing approval says: a grant (checked in full, or the call refused),
// or in caller mode the current digest.
func settles(c *call, mode toolgatetype.ApprovalMode) bool {
	if c.grant != uuid.Nil {
		return true
	}
	return mode == toolgatetype.ApprovalModeCaller && c.req.ApprovalDigest != "" && c.req.ApprovalDigest == c.tool.Digest
}

// sameSource reports whether approvals come from the store itself.
func sameSource(a ApprovalSource, s storage.Store) bool {
	ai, si := any(a), any(s)
	t := reflect.TypeOf(ai)
	// Comparing interfaces holding the same uncomparable type would panic.
	return t == reflect.TypeOf(si) && t.Comparable() && ai == si
}
