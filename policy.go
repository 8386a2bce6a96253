package toolgate

import (
	"context"
	"reflect"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/storage"
)

// RiskLevel is how much harm a call of a tool could do, classified from its
// declared capabilities.
type RiskLevel string

// Risk levels.
const (
	RiskUnknown  RiskLevel = "unknown"
	RiskLow      RiskLevel = "low"
	RiskMedium   RiskLevel = "medium"
	RiskHigh     RiskLevel = "high"
	RiskCritical RiskLevel = "critical"
)

// Requirement is the approval a call of a tool needs.
type Requirement string

// Approval requirements, from most to least restrictive.
const (
	// RequirementBlocked: the tool may not be called at all.
	RequirementBlocked Requirement = "blocked"
	// RequirementExplicitUnverified: every call needs an explicit approval of
	// the exact digest, because the endpoint is unverified or the risk unknown.
	RequirementExplicitUnverified Requirement = "explicit_unverified"
	// RequirementPerCall: every call needs an explicit approval (high or critical risk).
	RequirementPerCall Requirement = "per_call"
	// RequirementFirstUse: the first call needs an explicit approval; the
	// gateway remembers it for that exact digest.
	RequirementFirstUse Requirement = "first_use"
	// RequirementCoveredByUserPolicy: no explicit approval is needed.
	RequirementCoveredByUserPolicy Requirement = "covered_by_user_policy"
)

// Policy reasons, in the order they are listed.
const (
	ReasonNoImmutableVersion     = "tool does not yet have an immutable version"
	ReasonEndpointNotVerified    = "endpoint origin is not verified"
	ReasonCapabilitiesUndeclared = "capabilities have not been declared"
	ReasonPaymentNotVerified     = "paid provider has not completed payment verification"
	ReasonPaidEndpointUnverified = "paid endpoint must be verified"
)

// Policy is the decision about calling a tool version: whether it may be
// called at all, what approval a call needs, and why. It is computed from the
// tool's trust facts and capabilities only; nothing a tool returns can
// change it.
type Policy struct {
	Callable             bool           `json:"callable"`
	MonetizationEligible bool           `json:"monetizationEligible"`
	EligibleForAutoCall  bool           `json:"eligibleForAutoCall"`
	RiskLevel            RiskLevel      `json:"riskLevel"`
	Approval             ApprovalPolicy `json:"approval"`
	Reasons              []string       `json:"reasons"`
}

// ApprovalPolicy is the approval part of a Policy.
type ApprovalPolicy struct {
	Requirement    Requirement `json:"requirement"`
	ManifestDigest *string     `json:"manifestDigest"`
	// Standing is the caller's standing approval of this tool, when the
	// policy was evaluated for a caller who has one.
	Standing *StandingApproval `json:"standingApproval,omitempty"`
}

// StandingApproval is a caller's standing approval as it applies to the
// current tool version.
type StandingApproval struct {
	Mode           storage.ApprovalMode `json:"mode"`
	ManifestDigest string               `json:"manifestDigest"`
	// Stale is true when the approval was given for another digest: it no
	// longer applies, and the tool needs approving again.
	Stale bool `json:"stale"`
}

// RiskOf classifies normalized capabilities.
func RiskOf(c registry.NormalizedCapabilities) RiskLevel {
	switch {
	case !c.Declared:
		return RiskUnknown
	case c.ExecutesCode || c.SpendsMoney || c.Destructive:
		return RiskCritical
	case c.SendsMessages || c.WritesExternalData || c.ReadsPrivateData ||
		c.RequiresUserCredential || c.DataRetention == registry.RetentionStored:
		return RiskHigh
	case c.OpenWorld || c.SeesUntrustedContent || !c.ReadOnly ||
		c.DataRetention == registry.RetentionUnknown:
		return RiskMedium
	default:
		return RiskLow
	}
}

// EvaluatePolicy returns the policy of a tool version for any caller, before
// standing approvals.
func EvaluatePolicy(v *registry.Version) Policy {
	t := v.Tool
	paid := t.Pricing.Paid()
	endpointVerified := t.Endpoint.Verified
	paymentVerified := t.Provider.PaymentVerified
	hasVersion := v.Digest != ""

	reasons := []string{}
	if !hasVersion {
		reasons = append(reasons, ReasonNoImmutableVersion)
	}
	if !endpointVerified {
		reasons = append(reasons, ReasonEndpointNotVerified)
	}
	if !v.Capabilities.Declared {
		reasons = append(reasons, ReasonCapabilitiesUndeclared)
	}
	if paid && !paymentVerified {
		reasons = append(reasons, ReasonPaymentNotVerified)
	}
	if paid && !endpointVerified {
		reasons = append(reasons, ReasonPaidEndpointUnverified)
	}

	risk := RiskOf(v.Capabilities)
	var requirement Requirement
	switch {
	case !hasVersion || (paid && (!endpointVerified || !paymentVerified)):
		requirement = RequirementBlocked
	case !endpointVerified || risk == RiskUnknown:
		requirement = RequirementExplicitUnverified
	case risk == RiskHigh || risk == RiskCritical:
		requirement = RequirementPerCall
	case risk == RiskMedium:
		requirement = RequirementFirstUse
	default:
		requirement = RequirementCoveredByUserPolicy
	}

	var digest *string
	if hasVersion {
		d := v.Digest
		digest = &d
	}
	return Policy{
		Callable:             requirement != RequirementBlocked,
		MonetizationEligible: !paid || (endpointVerified && paymentVerified),
		EligibleForAutoCall:  requirement == RequirementCoveredByUserPolicy,
		RiskLevel:            risk,
		Approval:             ApprovalPolicy{Requirement: requirement, ManifestDigest: digest},
		Reasons:              reasons,
	}
}

// forCaller applies a caller's standing approval (nil when none) to the
// tool's policy. A standing approval never unblocks a blocked tool, and one
// given for another digest is stale and ignored. totalUSDIsZero says whether
// the call at hand costs nothing, for ApprovalAskChargedCalls.
func (p Policy) forCaller(a *storage.Approval, totalIsZero bool) Policy {
	if a == nil || p.Approval.ManifestDigest == nil {
		return p
	}
	current := *p.Approval.ManifestDigest
	standing := &StandingApproval{Mode: a.Mode, ManifestDigest: a.ManifestDigest, Stale: a.ManifestDigest != current}
	p.Approval.Standing = standing
	if standing.Stale || p.Approval.Requirement == RequirementBlocked {
		return p
	}
	covered := false
	switch a.Mode {
	case storage.ApprovalNeverAsk:
		covered = true
	case storage.ApprovalAskChargedCalls:
		covered = totalIsZero
	case storage.ApprovalFirstUse:
		covered = p.Approval.Requirement == RequirementFirstUse
	case storage.ApprovalAskEveryCall:
		// The caller wants to be asked even where the policy would not.
		if p.Approval.Requirement == RequirementCoveredByUserPolicy || p.Approval.Requirement == RequirementFirstUse {
			p.Approval.Requirement = RequirementPerCall
		}
	}
	if covered {
		p.Approval.Requirement = RequirementCoveredByUserPolicy
	}
	p.EligibleForAutoCall = p.Approval.Requirement == RequirementCoveredByUserPolicy
	return p
}

// needsApproval reports whether a call under this policy must carry an
// explicit approval of the manifest digest.
func (p Policy) needsApproval() bool {
	return p.Approval.Requirement != RequirementCoveredByUserPolicy
}

// explain adds to e what the policy required and why.
func (p Policy) explain(e *Error) *Error {
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
// In caller mode the digest sent is the approval (contract section 6). In
// approver mode it approves nothing: only a grant, or a standing approval
// an approver set, does (section 14). A grant approves in either mode, and
// is checked whenever one is sent, even where no approval is needed, just
// as a digest for another version is refused there.
func (g *Gateway) checkPolicy(ctx context.Context, c *call, q storage.Quote, read storage.ReadResult, mode ApprovalMode, now time.Time) (Policy, error) {
	v, approval := c.tool, c.req.ApprovalDigest
	policy := EvaluatePolicy(v)
	switch {
	case g.approvalsFromStore && settles(c, mode):
		// The call carries what approves this very digest, which is all any
		// approval requirement asks, and a standing approval changes only
		// the requirement, never whether the tool is callable: it cannot
		// change the outcome, so it was not read. (The one later use of the
		// policy, rememberFirstUse, reads the standing approval itself and
		// leaves it be whenever it would have changed a first_use
		// requirement.)
	case g.approvalsFromStore:
		policy = policy.forCaller(standingFor(read.Approval, mode), q.TotalUSD.IsZero())
	default:
		external, err := g.externalApproval(ctx, c.principal, v)
		if err != nil {
			return policy, internalError(err)
		}
		policy = policy.forCaller(standingFor(external, mode), q.TotalUSD.IsZero())
	}
	if !policy.Callable {
		return policy, policy.explain(newError(CodeToolBlocked, "%s cannot be called: %s", v.Tool.Slug, strings.Join(policy.Reasons, "; ")))
	}
	switch {
	case approval != "" && approval != v.Digest:
		// Even where no approval is needed, one for another digest means the
		// user approved something else.
		return policy, policy.explain(newError(CodeApprovalMismatch, "the approval names another manifest digest than %s's current version", v.Tool.Slug))
	case c.grant != uuid.Nil:
		return policy, checkGrant(c, read.Grant, now)
	case !policy.needsApproval():
		return policy, nil
	case mode == ApprovalModeApprover:
		e := policy.explain(newError(CodeApprovalRequired, "calling %s requires an approver's approval (%s): create an approval request for this quote and input, and send its id as approval.grantId once approved", v.Tool.Slug, policy.Approval.Requirement))
		e.GrantRequired = true
		return policy, e
	case approval == "":
		return policy, policy.explain(newError(CodeApprovalRequired, "calling %s requires approval of its manifest digest (%s)", v.Tool.Slug, policy.Approval.Requirement))
	}
	return policy, nil
}

// settles reports whether what the call carries approves it whatever the
// standing approval says: a grant (checked in full, or the call refused),
// or in caller mode the current digest.
func settles(c *call, mode ApprovalMode) bool {
	if c.grant != uuid.Nil {
		return true
	}
	return mode == ApprovalModeCaller && c.req.ApprovalDigest != "" && c.req.ApprovalDigest == c.tool.Digest
}

// sameSource reports whether approvals come from the store itself.
func sameSource(a ApprovalSource, s storage.Store) bool {
	ai, si := any(a), any(s)
	t := reflect.TypeOf(ai)
	// Comparing interfaces holding the same uncomparable type would panic.
	return t == reflect.TypeOf(si) && t.Comparable() && ai == si
}
