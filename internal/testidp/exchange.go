package testidp

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// The token exchange grant (RFC 8693), which zitadel's op serves for a
// storage that implements op.TokenExchangeStorage: a client exchanges an
// access token the provider issued for one with the same subject and the
// audience it asks for, which lasts 5 minutes.

// exchanges counts the exchanges a provider granted, and can be told to
// refuse every one.
type exchanges struct {
	granted atomic.Int64
	refuse  atomic.Bool
}

// Exchanges is how many token exchanges the provider granted.
func (p *Provider) Exchanges() int64 { return p.store.exchanges.granted.Load() }

// RefuseExchanges makes the provider refuse every token exchange from now
// on (access_denied), or grant them again.
func (p *Provider) RefuseExchanges(refuse bool) { p.store.exchanges.refuse.Store(refuse) }

var (
	_ op.TokenExchangeStorage = (*clientStore)(nil)
)

// GetClientByClientID is a client of this provider: every grant but the
// client credentials grant looks its client up here.
func (s *store) GetClientByClientID(_ context.Context, id string) (op.Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.clients[id]
	if !ok {
		return nil, errors.New("no such client")
	}
	return &opClient{c: c}, nil
}

// AuthorizeClientIDSecret checks a client's secret, for the grants that
// authenticate it with GetClientByClientID's client.
func (s *store) AuthorizeClientIDSecret(_ context.Context, id, secret string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.clients[id]; !ok || c.Secret != secret {
		return errors.New("wrong client id or secret")
	}
	return nil
}

func (s *store) ValidateTokenExchangeRequest(_ context.Context, req op.TokenExchangeRequest) error {
	if s.exchanges.refuse.Load() {
		return oidc.ErrAccessDenied().WithDescription("token exchange refused")
	}
	if req.GetRequestedTokenType() == "" {
		req.SetRequestedTokenType(oidc.AccessTokenType)
	}
	if req.GetRequestedTokenType() != oidc.AccessTokenType {
		return oidc.ErrInvalidRequest().WithDescription("only access tokens are issued")
	}
	if len(req.GetAudience()) == 0 {
		return oidc.ErrInvalidTarget().WithDescription("audience is required")
	}
	req.SetCurrentScopes(req.GetScopes())
	return nil
}

func (s *store) CreateTokenExchangeRequest(context.Context, op.TokenExchangeRequest) error {
	s.exchanges.granted.Add(1)
	return nil
}

func (s *store) GetPrivateClaimsFromTokenExchangeRequest(_ context.Context, req op.TokenExchangeRequest) (map[string]any, error) {
	claims := map[string]any{}
	if len(req.GetScopes()) > 0 {
		claims["scope"] = strings.Join(req.GetScopes(), " ")
	}
	return claims, nil
}

func (s *store) SetUserinfoFromTokenExchangeRequest(context.Context, *oidc.UserInfo, op.TokenExchangeRequest) error {
	return nil
}
