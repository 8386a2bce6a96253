package server

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"

	"github.com/toolgate/toolgate/internal/weburl"
	"github.com/toolgate/toolgate/toolgatetype"
	"github.com/toolgate/toolgate/webhook"
)

// Approver is a person who approves calls for some principals, with
// approver keys in clear or as SHA-256 digests.
type Approver struct {
	ID         string
	Keys       []string
	KeyDigests [][sha256.Size]byte
	Principals []string
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

// approvalMode parses a principal's approvalMode.
func approvalMode(n node) (toolgatetype.ApprovalMode, error) {
	s, err := n.str()
	if err != nil {
		return "", err
	}
	switch m := toolgatetype.ApprovalMode(s); m {
	case toolgatetype.ApprovalModeCaller, toolgatetype.ApprovalModeApprover:
		return m, nil
	}
	return "", n.errorf(`%q is not an approval mode: use "caller" or "approver"`, s)
}

// approvers parses the approvers. A key belongs to one approver; that it
// is no principal's too is checked once the whole file is read
// (checkApprovers), since principals may come after approvers.
func (p configParser) approvers(n node) ([]Approver, error) {
	items, err := n.items()
	if err != nil {
		return nil, err
	}
	out := make([]Approver, 0, len(items))
	owner := map[[sha256.Size]byte]string{} // key digest -> approver
	for _, item := range items {
		a, err := p.approver(item, owner)
		if err != nil {
			return nil, err
		}
		for _, other := range out {
			if other.ID == a.ID {
				return nil, item.child("id").errorf("approver %q is given twice", a.ID)
			}
		}
		out = append(out, a)
	}
	return out, nil
}

func (p configParser) approver(n node, owner map[[sha256.Size]byte]string) (Approver, error) {
	fs, err := n.fields("id", "keys", "keySha256", "principals")
	if err != nil {
		return Approver{}, err
	}
	var a Approver
	var keys, digests, principals []node
	for _, f := range fs {
		switch f.name {
		case "id":
			if a.ID, err = f.text(); err == nil && (a.ID == "" || len(a.ID) > maxPrincipalID) {
				err = f.errorf("must be 1 to %d characters", maxPrincipalID)
			}
		case "keys":
			keys, err = f.items()
		case "keySha256":
			digests, err = f.items()
		case "principals":
			principals, err = f.items()
		}
		if err != nil {
			return Approver{}, err
		}
	}
	if a.ID == "" {
		return Approver{}, n.errorf("id is required")
	}
	claim := func(k node, d [sha256.Size]byte) error {
		if other, taken := owner[d]; taken && other != a.ID {
			return k.errorf("this key already belongs to approver %q", other)
		}
		owner[d] = a.ID
		return nil
	}
	for _, k := range keys {
		key, err := k.str()
		if err != nil {
			return Approver{}, err
		}
		if !validKey(key) {
			return Approver{}, k.errorf("an approver key must be 1 to %d visible ASCII characters (no spaces)", maxKeyLen)
		}
		if err := claim(k, sha256.Sum256([]byte(key))); err != nil {
			return Approver{}, err
		}
		a.Keys = append(a.Keys, key)
	}
	for _, k := range digests {
		s, err := k.str()
		if err != nil {
			return Approver{}, err
		}
		raw, err := hex.DecodeString(s) // not quoted back: it may be a key pasted by mistake
		if err != nil || len(raw) != sha256.Size {
			return Approver{}, k.errorf("must be the SHA-256 of a key as 64 hex digits")
		}
		var d [sha256.Size]byte
		copy(d[:], raw)
		if err := claim(k, d); err != nil {
			return Approver{}, err
		}
		a.KeyDigests = append(a.KeyDigests, d)
	}
	// An approver without keys approves with access tokens alone, which
	// checkPrincipals checks once the whole file is read.
	for _, pn := range principals {
		id, err := pn.text()
		if err != nil {
			return Approver{}, err
		}
		if !slices.Contains(a.Principals, id) {
			a.Principals = append(a.Principals, id)
		}
	}
	return a, nil
}

func (p configParser) approvals(n node) (Approvals, error) {
	fs, err := n.fields("webhookUrl", "webhookSecret", "publicUrl")
	if err != nil {
		return Approvals{}, err
	}
	var a Approvals
	var secretNode node
	for _, f := range fs {
		switch f.name {
		case "webhookUrl":
			if a.WebhookURL, err = f.str(); err == nil && !webURL(a.WebhookURL, weburl.Allow{PortOnlyHost: true, Path: true, Query: true, Fragment: true}) {
				err = f.errorf("must be an http or https URL")
			}
		case "webhookSecret":
			secretNode = f.node
			// Never quoted back, whatever is wrong with it.
			if a.WebhookSecret, err = f.str(); err == nil {
				if _, perr := webhook.ParseSecret(a.WebhookSecret); perr != nil {
					err = f.errorf("must be whsec_ followed by 24 to 64 random bytes in base64 (Standard Webhooks)")
				}
			}
		case "publicUrl":
			// Links to the approval pages are made by appending their
			// paths, which a query or fragment would swallow.
			if a.PublicURL, err = f.str(); err == nil && !webURL(a.PublicURL, weburl.Allow{PortOnlyHost: true, Path: true}) {
				err = f.errorf("must be an http or https URL without query or fragment, the address people reach this server at")
			}
		}
		if err != nil {
			return Approvals{}, err
		}
	}
	switch {
	case a.WebhookURL != "" && a.WebhookSecret == "":
		return Approvals{}, n.child("webhookSecret").errorf("is required with webhookUrl: every webhook is signed")
	case a.WebhookURL == "" && a.WebhookSecret != "":
		return Approvals{}, secretNode.errorf("is given without a webhookUrl to send to")
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
	}
	for i, pr := range cfg.Principals {
		if pr.ApprovalMode != toolgatetype.ApprovalModeApprover {
			continue
		}
		covered := slices.ContainsFunc(cfg.Approvers, func(a Approver) bool { return slices.Contains(a.Principals, pr.ID) })
		if !covered {
			return &ConfigError{Path: fmt.Sprintf("principals[%d].approvalMode", i),
				Msg: fmt.Sprintf("principal %q is in approver mode, but no approver approves for it: none of its calls needing approval could ever run", pr.ID)}
		}
	}
	return nil
}
