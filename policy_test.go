package toolgate_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/toolgatetype"
)

func TestRiskLevel(t *testing.T) {
	t.Parallel()
	declared := func(mut func(*registry.Capabilities)) toolgatetype.NormalizedCapabilities {
		c := &registry.Capabilities{ReadOnly: registry.Bool(true), OpenWorld: registry.Bool(false),
			SeesUntrustedContent: registry.Bool(false), DataRetention: "none"}
		mut(c)
		return registry.NormalizeCapabilities(c, "https://x.example")
	}
	tests := []struct {
		name string
		caps toolgatetype.NormalizedCapabilities
		want toolgatetype.RiskLevel
	}{
		{"undeclared", registry.NormalizeCapabilities(nil, "https://x.example"), toolgatetype.RiskUnknown},
		{"low", declared(func(*registry.Capabilities) {}), toolgatetype.RiskLow},
		{"executes code", declared(func(c *registry.Capabilities) { c.ExecutesCode = registry.Bool(true) }), toolgatetype.RiskCritical},
		{"spends money", declared(func(c *registry.Capabilities) { c.SpendsMoney = registry.Bool(true) }), toolgatetype.RiskCritical},
		{"destructive", declared(func(c *registry.Capabilities) { c.Destructive = registry.Bool(true) }), toolgatetype.RiskCritical},
		{"sends messages", declared(func(c *registry.Capabilities) { c.SendsMessages = registry.Bool(true) }), toolgatetype.RiskHigh},
		{"writes external", declared(func(c *registry.Capabilities) { c.WritesExternalData = registry.Bool(true) }), toolgatetype.RiskHigh},
		{"reads private", declared(func(c *registry.Capabilities) { c.ReadsPrivateData = registry.Bool(true) }), toolgatetype.RiskHigh},
		{"needs credential", declared(func(c *registry.Capabilities) { c.RequiresUserCredential = registry.Bool(true) }), toolgatetype.RiskHigh},
		{"stores data", declared(func(c *registry.Capabilities) { c.DataRetention = "stored" }), toolgatetype.RiskHigh},
		{"open world", declared(func(c *registry.Capabilities) { c.OpenWorld = registry.Bool(true) }), toolgatetype.RiskMedium},
		{"untrusted content", declared(func(c *registry.Capabilities) { c.SeesUntrustedContent = registry.Bool(true) }), toolgatetype.RiskMedium},
		{"not read-only", declared(func(c *registry.Capabilities) { c.ReadOnly = registry.Bool(false) }), toolgatetype.RiskMedium},
		{"retention unknown", declared(func(c *registry.Capabilities) { c.DataRetention = "" }), toolgatetype.RiskMedium},
		{"declared with defaults", registry.NormalizeCapabilities(&registry.Capabilities{}, "https://x.example"), toolgatetype.RiskMedium},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, toolgate.RiskOf(tt.caps))
		})
	}
}

func TestEvaluatePolicyRequirements(t *testing.T) {
	t.Parallel()
	high := readOnly()
	high.SendsMessages = registry.Bool(true)
	medium := readOnly()
	medium.OpenWorld = registry.Bool(true)
	tests := []struct {
		name         string
		spec         toolSpec
		requirement  toolgatetype.Requirement
		callable     bool
		autoCall     bool
		monetization bool
		reasons      []string
	}{
		{
			name:        "no immutable version",
			spec:        toolSpec{capabilities: readOnly(), endpointVerified: true},
			requirement: toolgatetype.RequirementBlocked, monetization: true,
			reasons: []string{toolgatetype.ReasonNoImmutableVersion},
		},
		{
			name:        "paid without payment verification",
			spec:        toolSpec{price: "0.1", immutable: true, endpointVerified: true, capabilities: readOnly()},
			requirement: toolgatetype.RequirementBlocked,
			reasons:     []string{toolgatetype.ReasonPaymentNotVerified},
		},
		{
			name:        "paid with unverified endpoint",
			spec:        toolSpec{price: "0.1", immutable: true, paymentVerified: true, capabilities: readOnly()},
			requirement: toolgatetype.RequirementBlocked,
			reasons:     []string{toolgatetype.ReasonEndpointNotVerified, toolgatetype.ReasonPaidEndpointUnverified},
		},
		{
			name:        "all five reasons",
			spec:        toolSpec{price: "0.001"},
			requirement: toolgatetype.RequirementBlocked,
			reasons: []string{toolgatetype.ReasonNoImmutableVersion, toolgatetype.ReasonEndpointNotVerified,
				toolgatetype.ReasonCapabilitiesUndeclared, toolgatetype.ReasonPaymentNotVerified, toolgatetype.ReasonPaidEndpointUnverified},
		},
		{
			name:        "free with unverified endpoint",
			spec:        toolSpec{immutable: true, capabilities: readOnly()},
			requirement: toolgatetype.RequirementExplicitUnverified, callable: true, monetization: true,
			reasons: []string{toolgatetype.ReasonEndpointNotVerified},
		},
		{
			name:        "verified but capabilities undeclared",
			spec:        toolSpec{immutable: true, endpointVerified: true},
			requirement: toolgatetype.RequirementExplicitUnverified, callable: true, monetization: true,
			reasons: []string{toolgatetype.ReasonCapabilitiesUndeclared},
		},
		{
			name:        "high risk",
			spec:        toolSpec{immutable: true, endpointVerified: true, capabilities: high},
			requirement: toolgatetype.RequirementPerCall, callable: true, monetization: true, reasons: []string{},
		},
		{
			name:        "medium risk",
			spec:        toolSpec{immutable: true, endpointVerified: true, capabilities: medium},
			requirement: toolgatetype.RequirementFirstUse, callable: true, monetization: true, reasons: []string{},
		},
		{
			name:        "low risk, paid and verified",
			spec:        paidCallable,
			requirement: toolgatetype.RequirementCoveredByUserPolicy, callable: true, autoCall: true, monetization: true, reasons: []string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := registry.New()
			require.NoError(t, reg.Register(echoTool(tt.spec)))
			v, err := reg.Lookup("echo")
			if err != nil {
				v, err = reg.Lookup(tt.spec.slug)
			}
			require.NoError(t, err)
			p := toolgate.EvaluatePolicy(v)
			assert.Equal(t, tt.requirement, p.Approval.Requirement)
			assert.Equal(t, tt.callable, p.Callable)
			assert.Equal(t, tt.autoCall, p.EligibleForAutoCall)
			assert.Equal(t, tt.monetization, p.MonetizationEligible)
			assert.Equal(t, tt.reasons, p.Reasons)
			if tt.spec.immutable {
				require.NotNil(t, p.Approval.ManifestDigest)
				assert.Equal(t, v.Digest, *p.Approval.ManifestDigest)
			} else {
				assert.Nil(t, p.Approval.ManifestDigest)
			}
		})
	}
}
