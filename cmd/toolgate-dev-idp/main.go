// Command toolgate-dev-idp is a loopback OpenID provider for trying
// toolgate with access tokens: users, groups and clients from a small JSON
// file, and a ready access token per user and client printed at start.
// It is a program of its own so that the server's binary carries no
// identity provider.
//
//	go run ./cmd/toolgate-dev-idp -users users.json
package main

import (
	"context"
	"crypto"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/toolgate/toolgate/internal/devidp"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage: toolgate-dev-idp -users users.json [-listen 127.0.0.1:8090] [-key key.pem] [-token-lifetime 8h]

A local OpenID provider for trying toolgate with access tokens: discovery,
its key set, the client credentials grant, the authorization code grant
with PKCE (a login page), and token exchange (RFC 8693), for the users and
clients of the file. It listens on loopback only, and prints its issuer
and an access token per user and per service (a client with a secret and
no redirect URIs).
`

// run is the program: 0 once stopped, 2 for a mistake in the flags or the
// users file (one line naming it), 1 when it cannot serve.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("toolgate-dev-idp", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	usersPath := fs.String("users", "", "the users file (JSON)")
	listen := fs.String("listen", "127.0.0.1:8090", "the loopback address to listen on")
	keyPath := fs.String("key", "", "a PEM private key to sign with (RSA, P-256 or Ed25519); without it a key is made at start")
	lifetime := fs.Duration("token-lifetime", devidp.DefaultTokenLifetime, "how long tokens last")
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "toolgate-dev-idp: "+format+"\n", a...)
		return 2
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, usage)
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return 0
		}
		return fail("%v (-h for help)", err)
	}
	switch {
	case fs.NArg() > 0:
		return fail("unexpected argument %q (-h for help)", fs.Arg(0))
	case *usersPath == "":
		return fail("-users is required: the file of users, groups and clients (-h for help)")
	case *lifetime <= 0:
		return fail("-token-lifetime must be positive")
	}
	if err := devidp.CheckLoopback(*listen); err != nil {
		return fail("%v", err)
	}
	users, err := devidp.LoadUsers(*usersPath)
	if err != nil {
		return fail("%s: %v", *usersPath, err)
	}
	var key crypto.Signer
	if *keyPath != "" {
		if key, err = devidp.LoadKey(*keyPath); err != nil {
			return fail("-key %v", err)
		}
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(stderr, "toolgate-dev-idp: %v\n", err)
		return 1
	}
	issuer := "http://" + ln.Addr().String()
	p, err := devidp.New(issuer, users, &devidp.Config{Key: key, TokenLifetime: *lifetime})
	if err != nil {
		ln.Close()
		fmt.Fprintf(stderr, "toolgate-dev-idp: %v\n", err)
		return 1
	}
	tokens, err := p.Tokens(ctx)
	if err != nil {
		ln.Close()
		fmt.Fprintf(stderr, "toolgate-dev-idp: %v\n", err)
		return 1
	}
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	fmt.Fprintf(stdout, "toolgate-dev-idp issuer %s\n", issuer)
	fmt.Fprintf(stdout, "# access tokens for %s; paste these lines into a shell:\n", users.Audience)
	groups := map[string][]string{}
	for _, u := range users.Users {
		groups[u.ID] = u.Groups
	}
	for _, c := range users.Clients {
		groups[c.ID] = c.Groups
	}
	for _, t := range tokens {
		g := "no groups"
		if len(groups[t.Subject]) > 0 {
			g = "groups " + strings.Join(groups[t.Subject], ", ")
		}
		fmt.Fprintf(stdout, "# %s (%s), until %s\nexport %s=%s\n", t.Subject, g, t.Expires.UTC().Format(time.RFC3339), t.Var, t.AccessToken)
	}

	select {
	case err := <-served:
		fmt.Fprintf(stderr, "toolgate-dev-idp: %v\n", err)
		return 1
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdown)
	return 0
}
