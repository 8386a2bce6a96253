package oauth

import (
	"encoding/json"
	"maps"

	"github.com/toolgate/toolgate/internal/textcheck"
)

// ClaimApprover is an approver whom tokens reach by their claims
// (Config.ClaimApprovers): a person whose identity provider puts them in
// a group is that group's approver, with no key and no claim naming an
// approver id.
type ClaimApprover struct {
	// ID is the approver's id.
	ID string
	// Claims must all match, as a budget's do: a string claim equal to the
	// value, or an array claim holding it, exactly.
	Claims map[string]string
}

// claimApprovers is Config.ClaimApprovers, copied.
type claimApprovers []ClaimApprover

func newClaimApprovers(in []ClaimApprover) *claimApprovers {
	out := make(claimApprovers, 0, len(in))
	for _, a := range in {
		if a.ID != "" && len(a.Claims) > 0 {
			out = append(out, ClaimApprover{ID: a.ID, Claims: maps.Clone(a.Claims)})
		}
	}
	return &out
}

// SetClaimApprovers replaces Config.ClaimApprovers, for approvers changed
// while the verifier runs, and forgets the tokens verified so far, so that
// each is read again with these.
func (v *Verifier) SetClaimApprovers(approvers []ClaimApprover) {
	v.claimApprovers.Store(newClaimApprovers(approvers))
	v.verified.reset()
}

// approverOf is the approver the claims make their holder, whatever the
// scopes: the one the ApproverClaim names when it names an approver in
// force, else the first of the ClaimApprovers whose claims all match; ""
// for none. refused says why a named approver was not taken.
func (v *Verifier) approverOf(c claims) (id, refused string) {
	if name := v.cfg.ApproverClaim; name != "" {
		named, ok := c.str(name)
		switch {
		case ok && textcheck.Problem(named) != "":
			refused = "its " + name + " claim " + textcheck.Problem(named)
		case !ok || !validID(named):
			refused = "its " + name + " claim names no approver"
		case v.cfg.Approvers != nil && !v.cfg.Approvers(named):
			refused = "its " + name + " claim names no approver of this gateway"
		default:
			return named, ""
		}
	}
	for _, a := range *v.claimApprovers.Load() {
		if c.holdsAll(a.Claims) {
			return a.ID, ""
		}
	}
	return "", refused
}

// ApproverFor returns the approver whose claims these are, for a person
// signed in some other way than with an access token: the approval pages'
// sign-in passes the claims of the ID token it verified. The ApproverClaim
// is read first, then the ClaimApprovers in order, as for access tokens;
// no scope is needed, since an ID token carries none. False when the
// claims make their holder no approver.
func (v *Verifier) ApproverFor(idTokenClaims map[string]any) (string, bool) {
	c := make(claims, len(idTokenClaims))
	for name, value := range idTokenClaims {
		raw, err := json.Marshal(value)
		if err != nil {
			continue
		}
		c[name] = raw
	}
	id, _ := v.approverOf(c)
	return id, id != ""
}

// holdsAll reports whether every (name, value) of want is among the
// claims: a string claim equal to the value, or an array claim holding it.
func (c claims) holdsAll(want map[string]string) bool {
	for name, value := range want {
		if !c.holds(name, value) {
			return false
		}
	}
	return len(want) > 0
}

func (c claims) holds(name, value string) bool {
	raw, ok := c[name]
	if !ok {
		return false
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return one == value
	}
	var many []json.RawMessage
	if json.Unmarshal(raw, &many) != nil {
		return false
	}
	for _, item := range many {
		var s string
		if json.Unmarshal(item, &s) == nil && s == value {
			return true
		}
	}
	return false
}
