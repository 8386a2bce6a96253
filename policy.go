package toolgate

import (
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/storage"
)

// Risk levels.
const (
	RiskUnknown  = "unknown"
	RiskLow      = "low"
	RiskMedium   = "medium"
	RiskHigh     = "high"
	RiskCritical = "critical"
)

// Approval requirements, from most to least restrictive.
const (
	// RequirementBlocked: the tool may not be called at all.
	RequirementBlocked = "blocked"
	// RequirementExplicitUnverified: every call needs an explicit approval of
	// the exact digest, because the endpoint is unverified or the risk unknown.
	RequirementExplicitUnverified = "explicit_unverified"
	// RequirementPerCall: every call needs an explicit approval (high or critical risk).
	RequirementPerCall = "per_call"
	// RequirementFirstUse: the first call needs an explicit approval; the
	// gateway remembers it for that exact digest.
	RequirementFirstUse = "first_use"
	// RequirementCoveredByUserPolicy: no explicit approval is needed.
	RequirementCoveredByUserPolicy = "covered_by_user_policy"
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
	RiskLevel            string         `json:"riskLevel"`
	Approval             ApprovalPolicy `json:"approval"`
	Reasons              []string       `json:"reasons"`
}

// ApprovalPolicy is the approval part of a Policy.
type ApprovalPolicy struct {
	Requirement    string  `json:"requirement"`
	ManifestDigest *string `json:"manifestDigest"`
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

// RiskLevel classifies normalized capabilities.
func RiskLevel(c registry.NormalizedCapabilities) string {
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

	risk := RiskLevel(v.Capabilities)
	var requirement string
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
