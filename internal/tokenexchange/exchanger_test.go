package tokenexchange_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/testidp"
	"github.com/toolgate/toolgate/internal/tokenexchange"
)

func provider(t *testing.T) (*testidp.Provider, tokenexchange.Config) {
	idp := testidp.Start(t, "https://gateway.example")
	idp.AddClient(testidp.Client{ID: "ann", Secret: "secret-ann"})
	idp.AddClient(testidp.Client{ID: "gateway", Secret: "secret-gateway"})
	return idp, tokenexchange.Config{Upstream: "notes", TokenURL: idp.TokenURL, Audience: "https://notes.example",
		Scope: "notes:read", ClientID: "gateway", ClientSecret: "secret-gateway"}
}

func TestTokenIsKeptUntilAMinuteBeforeItExpires(t *testing.T) {
	t.Parallel()
	idp, cfg := provider(t)
	now := time.Now()
	ex := &tokenexchange.Exchanger{Now: func() time.Time { return now }}
	caller := idp.Token(t, "ann")
	first, err := ex.Token(context.Background(), cfg, "ann", caller)
	require.NoError(t, err)
	assert.NotEqual(t, caller, first)

	now = now.Add(5*time.Minute - tokenexchange.Early - time.Second) // the provider's tokens last 5 minutes
	again, err := ex.Token(context.Background(), cfg, "ann", caller)
	require.NoError(t, err)
	assert.Equal(t, first, again)
	assert.EqualValues(t, 1, idp.Exchanges())

	now = now.Add(2 * time.Second) // within the last minute
	fresh, err := ex.Token(context.Background(), cfg, "ann", caller)
	require.NoError(t, err)
	assert.NotEqual(t, first, fresh)
	assert.EqualValues(t, 2, idp.Exchanges())

	other := cfg
	other.Upstream, other.Audience = "mail", "https://mail.example"
	_, err = ex.Token(context.Background(), other, "ann", caller)
	require.NoError(t, err)
	assert.EqualValues(t, 3, idp.Exchanges(), "kept per subject and upstream")
}

func TestRefusalsNameTheUpstreamNotTheToken(t *testing.T) {
	t.Parallel()
	idp, cfg := provider(t)
	caller := idp.Token(t, "ann")
	ex := &tokenexchange.Exchanger{}

	idp.RefuseExchanges(true)
	_, err := ex.Token(context.Background(), cfg, "ann", caller)
	var te *tokenexchange.Error
	require.True(t, errors.As(err, &te))
	assert.Equal(t, "notes", te.Upstream)
	assert.False(t, te.Unreachable)
	assert.Equal(t, "access_denied", te.Code)
	assert.NotContains(t, err.Error(), caller)

	wrong := cfg
	wrong.ClientSecret = "not-the-secret"
	idp.RefuseExchanges(false)
	_, err = ex.Token(context.Background(), wrong, "ann", caller)
	require.True(t, errors.As(err, &te), "a wrong client secret: %v", err)

	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	gone := cfg
	gone.TokenURL = closed.URL + "/token"
	_, err = ex.Token(context.Background(), gone, "ann", caller)
	require.True(t, errors.As(err, &te))
	assert.True(t, te.Unreachable)
	assert.NotContains(t, err.Error(), caller)
}

// A provider whose discovery document allows client_secret_post alone is
// sent the client's secret in the form.
func TestClientAuthenticatesAsDiscoveryAllows(t *testing.T) {
	t.Parallel()
	var srv *httptest.Server
	var how atomic.Value
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/.well-known/openid-configuration" {
			_, _ = w.Write([]byte(`{"token_endpoint": "` + srv.URL + `/token", "token_endpoint_auth_methods_supported": ["client_secret_post"]}`))
			return
		}
		require.NoError(t, r.ParseForm())
		_, _, basic := r.BasicAuth()
		how.Store(map[bool]string{true: "basic", false: "post:" + r.PostForm.Get("client_secret")}[basic])
		_, _ = w.Write([]byte(`{"access_token": "exchanged", "token_type": "Bearer", "expires_in": 300}`))
	}))
	defer srv.Close()
	_, err := (&tokenexchange.Exchanger{}).Token(context.Background(), tokenexchange.Config{Upstream: "notes", TokenURL: srv.URL + "/token",
		Audience: "https://notes.example", ClientID: "gateway", ClientSecret: "s3cret"}, "ann", "caller-token")
	require.NoError(t, err)
	assert.Equal(t, "post:s3cret", how.Load())
}

// The exchange's request is RFC 8693's: the grant, the subject token and
// its type, the audience, scope and resource, the client authenticated.
func TestExchangeRequest(t *testing.T) {
	t.Parallel()
	var got atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.NoError(t, r.ParseForm())
		id, secret, basic := r.BasicAuth()
		got.Store([]string{r.PostForm.Encode(), id + ":" + secret, map[bool]string{true: "basic"}[basic]})
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"access_token": "exchanged", "issued_token_type": "urn:ietf:params:oauth:token-type:access_token", "token_type": "Bearer", "expires_in": 300}`))
	}))
	defer srv.Close()
	cfg := tokenexchange.Config{Upstream: "notes", TokenURL: srv.URL, Audience: "https://notes.example", Scope: "a b",
		Resource: "https://notes.example/api", ClientID: "gateway", ClientSecret: "s3cret"}
	tok, err := (&tokenexchange.Exchanger{}).Token(context.Background(), cfg, "ann", "caller-token")
	require.NoError(t, err)
	assert.Equal(t, "exchanged", tok)
	req := got.Load().([]string)
	for _, p := range []string{"grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Atoken-exchange", "subject_token=caller-token",
		"subject_token_type=urn%3Aietf%3Aparams%3Aoauth%3Atoken-type%3Aaccess_token", "audience=https%3A%2F%2Fnotes.example",
		"scope=a+b", "resource=https%3A%2F%2Fnotes.example%2Fapi"} {
		assert.Contains(t, strings.Split(req[0], "&"), p)
	}
	assert.Equal(t, []string{"gateway:s3cret", "basic"}, req[1:])
}

func TestContextTokensPrintAsAMark(t *testing.T) {
	t.Parallel()
	ctx := tokenexchange.WithUpstreamToken(tokenexchange.WithCallerToken(context.Background(), "caller-secret"), "upstream-secret")
	s := ctx.(interface{ String() string }).String()
	assert.NotContains(t, s, "secret")
	c, _ := tokenexchange.CallerToken(ctx)
	u, _ := tokenexchange.UpstreamToken(ctx)
	assert.Equal(t, []string{"caller-secret", "upstream-secret"}, []string{c, u})
}

// A subject's calls that come at once share one exchange: the provider is
// asked once, and every call gets the token.
func TestCallsAtOnceShareOneExchange(t *testing.T) {
	t.Parallel()
	idp, cfg := provider(t)
	ex := &tokenexchange.Exchanger{}
	caller := idp.Token(t, "ann")
	const calls = 16
	got := make(chan string, calls)
	start := make(chan struct{})
	for range calls {
		go func() {
			<-start
			tok, err := ex.Token(context.Background(), cfg, "ann", caller)
			assert.NoError(t, err)
			got <- tok
		}()
	}
	close(start)
	first := <-got
	for range calls - 1 {
		assert.True(t, <-got == first, "every call gets the one token") // not printed: a token
	}
	assert.EqualValues(t, 1, idp.Exchanges(), "one exchange for calls that came at once")
}
