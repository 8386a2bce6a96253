package toolgatetype

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
	// ReasonUpstreamNotPinned and ReasonUpstreamPinChanged block a tool of
	// an upstream MCP server whose operator pins its tools, until the
	// operator pins the definition served now.
	ReasonUpstreamNotPinned  = "upstream tool definition is not pinned"
	ReasonUpstreamPinChanged = "upstream tool definition changed since it was pinned"
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
	// Rules are the organization's rules that match the call, or may once
	// its input is known (Pending); absent when none does.
	Rules []PolicyRule `json:"rules,omitempty"`
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
	Mode           StandingMode `json:"mode"`
	ManifestDigest string       `json:"manifestDigest"`
	// Stale is true when the approval was given for another digest: it no
	// longer applies, and the tool needs approving again.
	Stale bool `json:"stale"`
}
