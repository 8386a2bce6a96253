package server

import (
	"crypto/sha256"
	"fmt"
	"maps"
	"slices"

	"github.com/toolgate/toolgate/internal/weburl"
	"github.com/toolgate/toolgate/oauth"
	"github.com/toolgate/toolgate/toolgatetype"
	"github.com/toolgate/toolgate/webhook"
)

// Approver is a person who approves calls for some principals, with
// approver keys in clear or as SHA-256 digests, or with access tokens whose
// claims match Claims (or name it by oauth.approverClaim).
type Approver struct {
	ID         string
	Keys       []string
	KeyDigests [][sha256.Size]byte
	Principals []string
	// Claims make every token with the approve scope that holds them all
	// this approver, matched as a budget's claims are.
	Claims map[string]string
	// Budgets make it the approver of every principal counted in these
	// budgets and their descendants, as the budgets' own approvers are.
	Budgets []string
}

// Approvals are the settings of approval requests: where to tell people
// of them.
type Approvals struct {
	// WebhookURL receives each new request and each decision, signed with
	// WebhookSecret ("whsec_..."). Both or neither.
	WebhookURL    string
	WebhookSecret string
	// PublicURL is the address people reach this server at, for the
	// approveUrl of a webhook's request; empty means http:// and the
	// address the server listens on.
	PublicURL string
}

// approvalMode checks a principal's approvalMode.
func approvalMode(path, s string) (toolgatetype.ApprovalMode, error) {
	switch m := toolgatetype.ApprovalMode(s); m {
	case toolgatetype.ApprovalModeCaller, toolgatetype.ApprovalModeApprover:
		return m, nil
	}
	return "", errorf(path, `%q is not an approval mode: use "caller" or "approver"`, s)
}

// approverJSON is an entry of "approvers".
type approverJSON struct {
	ID         *text                  `json:"id"`
	Keys       []str                  `json:"keys"`
	KeySha256  []str                  `json:"keySha256"`
	Principals []text                 `json:"principals"`
	Claims     map[string]*claimValue `json:"claims"`
	Budgets    []text                 `json:"budgets"`
}

// approvers checks the approvers. A key belongs to one approver; that it
// is no principal's too is checked once the whole file is read
// (checkApprovers).
func (p configParser) approvers(path string, in []approverJSON) ([]Approver, error) {
	if in == nil {
		return nil, nil
	}
	out := make([]Approver, 0, len(in))
	owner := map[[sha256.Size]byte]string{} // key digest -> approver
	for i, item := range in {
		a, err := approver(index(path, i), item, owner)
		if err != nil {
			return nil, err
		}
		for _, other := range out {
			if other.ID == a.ID {
				return nil, errorf(at(index(path, i), "id"), "approver %q is given twice", a.ID)
			}
		}
		out = append(out, a)
	}
	return out, nil
}

func approver(path string, in approverJSON, owner map[[sha256.Size]byte]string) (Approver, error) {
	var a Approver
	if in.ID != nil {
		if a.ID = string(*in.ID); a.ID == "" || len(a.ID) > maxPrincipalID {
			return Approver{}, errorf(at(path, "id"), "must be 1 to %d characters", maxPrincipalID)
		}
	}
	if a.ID == "" {
		return Approver{}, errorf(path, "id is required")
	}
	claim := func(keyPath string, d [sha256.Size]byte) error {
		if other, taken := owner[d]; taken && other != a.ID {
			return errorf(keyPath, "this key already belongs to approver %q", other)
		}
		owner[d] = a.ID
		return nil
	}
	for i, key := range strs(in.Keys) {
		keyPath := index(at(path, "keys"), i)
		if !validKey(key) {
			return Approver{}, errorf(keyPath, "an approver key must be 1 to %d visible ASCII characters (no spaces)", maxKeyLen)
		}
		if err := claim(keyPath, sha256.Sum256([]byte(key))); err != nil {
			return Approver{}, err
		}
		a.Keys = append(a.Keys, key)
	}
	for i, s := range strs(in.KeySha256) {
		keyPath := index(at(path, "keySha256"), i)
		d, ok := keyDigest(s) // not quoted back: it may be a key pasted by mistake
		if !ok {
			return Approver{}, errorf(keyPath, "must be the SHA-256 of a key as 64 hex digits")
		}
		if err := claim(keyPath, d); err != nil {
			return Approver{}, err
		}
		a.KeyDigests = append(a.KeyDigests, d)
	}
	// An approver without keys approves with access tokens alone, which
	// checkPrincipals checks once the whole file is read.
	for _, id := range texts(in.Principals) {
		if !slices.Contains(a.Principals, id) {
			a.Principals = append(a.Principals, id)
		}
	}
	if in.Claims != nil {
		a.Claims = make(map[string]string, len(in.Claims))
		for _, name := range slices.Sorted(maps.Keys(in.Claims)) {
			if name == "" {
				return Approver{}, errorf(at(path, "claims"), "a claim's name is empty")
			}
			if v := in.Claims[name]; v != nil {
				a.Claims[name] = string(*v)
			}
		}
	}
	for _, id := range texts(in.Budgets) {
		if !slices.Contains(a.Budgets, id) {
			a.Budgets = append(a.Budgets, id)
		}
	}
	return a, nil
}

// approvalsJSON is "approvals".
type approvalsJSON struct {
	WebhookURL    *string `json:"webhookUrl"`
	WebhookSecret *string `json:"webhookSecret"`
	PublicURL     *string `json:"publicUrl"`
}

func (in *approvalsJSON) approvals(path string) (Approvals, error) {
	var a Approvals
	if in.WebhookURL != nil {
		if a.WebhookURL = *in.WebhookURL; !webURL(a.WebhookURL, weburl.Allow{PortOnlyHost: true, Path: true, Query: true, Fragment: true}) {
			return Approvals{}, errorf(at(path, "webhookUrl"), "must be an http or https URL")
		}
	}
	if in.WebhookSecret != nil {
		// Never quoted back, whatever is wrong with it.
		a.WebhookSecret = *in.WebhookSecret
		if _, err := webhook.ParseSecret(a.WebhookSecret); err != nil {
			return Approvals{}, errorf(at(path, "webhookSecret"), "must be whsec_ followed by 24 to 64 random bytes in base64 (Standard Webhooks)")
		}
	}
	if in.PublicURL != nil {
		// Links to the approval pages are made by appending their
		// paths, which a query or fragment would swallow.
		if a.PublicURL = *in.PublicURL; !webURL(a.PublicURL, weburl.Allow{PortOnlyHost: true, Path: true}) {
			return Approvals{}, errorf(at(path, "publicUrl"), "must be an http or https URL without query or fragment, the address people reach this server at")
		}
	}
	switch {
	case a.WebhookURL != "" && a.WebhookSecret == "":
		return Approvals{}, errorf(at(path, "webhookSecret"), "is required with webhookUrl: every webhook is signed")
	case a.WebhookURL == "" && a.WebhookSecret != "":
		return Approvals{}, errorf(at(path, "webhookSecret"), "is given without a webhookUrl to send to")
	}
	return a, nil
}

// webURL accepts an absolute http or https URL with a host, no
// credentials, and what else allow allows.
func webURL(s string, allow weburl.Allow) bool {
	_, err := weburl.Check(s, allow)
	return err == nil
}

// checkApprovers checks what approvers and principals say of each other,
// once both are read: no key is both a principal's and an approver's
// (the error names both places, never the key), every principal an
// approver approves for is configured, and every principal in approver
// mode has an approver.
func (p configParser) checkApprovers(cfg *Config) error {
	for i, a := range cfg.Approvers {
		at := fmt.Sprintf("approvers[%d]", i)
		check := func(path string, d [sha256.Size]byte) error {
			if other, taken := p.callerKeys[d]; taken {
				return &ConfigError{Path: path, Msg: "this key is also " + other + ": a key is a caller key or an approver key, never both"}
			}
			return nil
		}
		for j, k := range a.Keys {
			if err := check(fmt.Sprintf("%s.keys[%d]", at, j), sha256.Sum256([]byte(k))); err != nil {
				return err
			}
		}
		for j, d := range a.KeyDigests {
			if err := check(fmt.Sprintf("%s.keySha256[%d]", at, j), d); err != nil {
				return err
			}
		}
		for j, id := range a.Principals {
			if !slices.ContainsFunc(cfg.Principals, func(pr Principal) bool { return pr.ID == id }) {
				return &ConfigError{Path: fmt.Sprintf("%s.principals[%d]", at, j), Msg: fmt.Sprintf("no principal %q is configured", id)}
			}
		}
		for j, id := range a.Budgets {
			if !slices.ContainsFunc(cfg.Budgets, func(b toolgatetype.BudgetDefinition) bool { return b.ID == id }) {
				return &ConfigError{Path: fmt.Sprintf("%s.budgets[%d]", at, j), Msg: fmt.Sprintf("no budget %q is configured", id)}
			}
		}
	}
	for i, pr := range cfg.Principals {
		if pr.ApprovalMode != toolgatetype.ApprovalModeApprover || approvedFor(cfg, pr.ID) {
			continue
		}
		msg := fmt.Sprintf("principal %q is in approver mode, but no approver approves for it: none of its calls needing approval could ever run", pr.ID)
		if pr.ID == PrincipalTemplate {
			msg = `the "*" template is in approver mode, but no budget has an approver (its "approvers", or an approver's "budgets"): no token subject's call needing approval could ever run`
		}
		return &ConfigError{Path: fmt.Sprintf("principals[%d].approvalMode", i), Msg: msg}
	}
	return nil
}

// approvedFor reports whether some approver approves for principal: one
// naming it, or one of a budget it is a member of (or of an ancestor of
// one). The template's subjects are approved for when any budget has an
// approver: which budgets a subject counts in, its token says.
func approvedFor(cfg *Config, principal string) bool {
	if slices.ContainsFunc(cfg.Approvers, func(a Approver) bool { return slices.Contains(a.Principals, principal) }) {
		return true
	}
	defs := budgetDefinitions(cfg)
	byID := map[string]toolgatetype.BudgetDefinition{}
	for _, b := range defs {
		byID[b.ID] = b
	}
	for _, b := range defs {
		in := principal == PrincipalTemplate || b.Everyone || slices.Contains(b.Members, principal)
		// Up the tree, at most once round it: cycles are refused later.
		for seen := 0; in && seen <= len(defs); seen++ {
			if len(b.Approvers) > 0 {
				return true
			}
			var ok bool
			if b, ok = byID[b.Parent]; !ok {
				break
			}
		}
	}
	return false
}

// budgetDefinitions are the budgets as the gateway takes them: each one's
// approvers with the approvers whose "budgets" name it, the one relation
// seen from both sides.
func budgetDefinitions(cfg *Config) []toolgatetype.BudgetDefinition {
	out := slices.Clone(cfg.Budgets)
	for i := range out {
		for _, a := range cfg.Approvers {
			if slices.Contains(a.Budgets, out[i].ID) && !slices.Contains(out[i].Approvers, a.ID) {
				out[i].Approvers = append(slices.Clip(out[i].Approvers), a.ID)
			}
		}
	}
	return out
}

// claimApprovers are the approvers tokens reach by their claims, in
// configuration order, for the verifier.
func claimApprovers(approvers []Approver) []oauth.ClaimApprover {
	var out []oauth.ClaimApprover
	for _, a := range approvers {
		if len(a.Claims) > 0 {
			out = append(out, oauth.ClaimApprover{ID: a.ID, Claims: a.Claims})
		}
	}
	return out
}
