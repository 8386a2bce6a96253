package devidp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// DefaultScopes are the scopes of a user or client whose entry names none:
// toolgate's call scope, so its tokens call and nothing more.
var DefaultScopes = []string{"toolgate:call"}

// Users is the users file: who signs in, who gets tokens by the client
// credentials grant, and the audience their tokens are for.
type Users struct {
	// Audience is the aud of every access token issued to a user or to a
	// client for itself: toolgate's oauth.audience, the URL of its /mcp.
	// A token exchange names its own audience.
	Audience string   `json:"audience"`
	Users    []User   `json:"users"`
	Clients  []Client `json:"clients"`
}

// User is a person who signs in on the provider's login page.
type User struct {
	// ID is the sub of the user's tokens.
	ID string `json:"id"`
	// Password, when set, is asked on the login page; a user without one
	// signs in by choosing their name.
	Password string `json:"password,omitempty"`
	// Groups is the user's groups claim.
	Groups []string `json:"groups,omitempty"`
	// Scopes are the scopes the user may be granted (DefaultScopes when
	// none); a request asking for none gets them all.
	Scopes []string `json:"scopes,omitempty"`
	// Claims are added to the user's tokens.
	Claims map[string]any `json:"claims,omitempty"`
}

// Client is an application: a client with a secret gets tokens for itself
// by the client credentials grant (its id is their sub) and exchanges
// tokens (RFC 8693); one with redirect URIs signs users in by the
// authorization code grant with PKCE, as a public client when it has no
// secret.
type Client struct {
	ID           string         `json:"id"`
	Secret       string         `json:"secret,omitempty"`
	RedirectURIs []string       `json:"redirectUris,omitempty"`
	Groups       []string       `json:"groups,omitempty"`
	Scopes       []string       `json:"scopes,omitempty"`
	Claims       map[string]any `json:"claims,omitempty"`
}

// FileError is a mistake in the users file, named by the field it is in.
type FileError struct {
	Path string // "users[1].id"; "" for the file as a whole
	Msg  string
}

func (e *FileError) Error() string {
	if e.Path == "" {
		return e.Msg
	}
	return e.Path + ": " + e.Msg
}

// reservedClaims are the claims the provider sets itself, which an entry's
// claims may not replace.
var reservedClaims = []string{"iss", "sub", "aud", "exp", "nbf", "iat", "jti", "azp", "client_id", "scope", "groups", "auth_time", "nonce", "at_hash", "c_hash", "act"}

// LoadUsers reads and checks the users file at path.
func LoadUsers(path string) (*Users, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseUsers(data)
}

// ParseUsers parses and checks a users file: ids unique across users and
// clients, since each is a subject; a client that can do something; no
// claim the provider sets itself.
func ParseUsers(data []byte) (*Users, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var u Users
	if err := dec.Decode(&u); err != nil {
		return nil, &FileError{Msg: "not a users file: " + err.Error()}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, &FileError{Msg: "not a users file: more after the object"}
	}
	if u.Audience == "" {
		return nil, &FileError{Path: "audience", Msg: "is required: toolgate's oauth.audience, the URL of its /mcp"}
	}
	if len(u.Users)+len(u.Clients) == 0 {
		return nil, &FileError{Path: "users", Msg: "no users and no clients: nobody could get a token"}
	}
	seen := map[string]string{}
	id := func(path, id string) error {
		if id == "" || strings.ContainsAny(id, " \t\r\n") {
			return &FileError{Path: path + ".id", Msg: "must be a subject: not empty, no spaces"}
		}
		if first, ok := seen[id]; ok {
			return &FileError{Path: path + ".id", Msg: fmt.Sprintf("%q is %s already: an id is a token's subject, one per user or client", id, first)}
		}
		seen[id] = path
		// Each token is printed in a shell variable named after its id.
		if first, ok := seen[shellVar(id)]; ok {
			return &FileError{Path: path + ".id", Msg: fmt.Sprintf("%q would print its token in %s, as %s does", id, shellVar(id), first)}
		}
		seen[shellVar(id)] = path
		return nil
	}
	for i := range u.Users {
		p := fmt.Sprintf("users[%d]", i)
		if err := id(p, u.Users[i].ID); err != nil {
			return nil, err
		}
		if err := checkEntry(p, u.Users[i].Scopes, u.Users[i].Claims); err != nil {
			return nil, err
		}
	}
	for i, c := range u.Clients {
		p := fmt.Sprintf("clients[%d]", i)
		if err := id(p, c.ID); err != nil {
			return nil, err
		}
		if c.Secret == "" && len(c.RedirectURIs) == 0 {
			return nil, &FileError{Path: p, Msg: "needs a secret (client credentials, token exchange) or redirectUris (sign-in), or both"}
		}
		if err := checkEntry(p, c.Scopes, c.Claims); err != nil {
			return nil, err
		}
	}
	return &u, nil
}

func checkEntry(path string, scopes []string, claims map[string]any) error {
	for j, sc := range scopes {
		if sc == "" || strings.ContainsAny(sc, " \"\\") {
			return &FileError{Path: fmt.Sprintf("%s.scopes[%d]", path, j), Msg: "must be one scope: no spaces, quotes or backslashes"}
		}
	}
	for name := range claims {
		if slices.Contains(reservedClaims, name) {
			return &FileError{Path: fmt.Sprintf("%s.claims[%q]", path, name), Msg: "is set by the provider itself"}
		}
	}
	return nil
}

// subject is a user or a client as its tokens describe it.
type subject struct {
	id     string
	groups []string
	scopes []string
	claims map[string]any
}

// subjects indexes the file's users and clients by id.
func (u *Users) subjects() map[string]*subject {
	out := map[string]*subject{}
	add := func(id string, groups, scopes []string, claims map[string]any) {
		if len(scopes) == 0 {
			scopes = DefaultScopes
		}
		out[id] = &subject{id: id, groups: groups, scopes: scopes, claims: claims}
	}
	for _, us := range u.Users {
		add(us.ID, us.Groups, us.Scopes, us.Claims)
	}
	for _, c := range u.Clients {
		add(c.ID, c.Groups, c.Scopes, c.Claims)
	}
	return out
}

// grant is what a subject is granted of the scopes asked for: those it
// may have, or all of them when none of its own were asked.
func (s *subject) grant(asked []string) []string {
	var out []string
	for _, sc := range asked {
		if slices.Contains(s.scopes, sc) {
			out = append(out, sc)
		}
	}
	if len(out) == 0 {
		return s.scopes
	}
	return out
}

// tokenClaims are the claims the subject's access tokens carry beside
// the standard ones.
func (s *subject) tokenClaims(scopes []string) map[string]any {
	claims := map[string]any{}
	for k, v := range s.claims {
		claims[k] = v
	}
	if len(s.groups) > 0 {
		claims["groups"] = s.groups
	}
	if len(scopes) > 0 {
		claims["scope"] = strings.Join(scopes, " ")
	}
	return claims
}
