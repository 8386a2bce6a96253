// Command mcpagent is a small agent on the MCP SDK's client that reaches a
// toolgate gateway over MCP: it lists the tools, calls one, and when the
// gateway asks for approval (an elicitation form), asks a stand-in user.
//
// With no flags it runs offline, in one process: a gateway over recorded
// provider answers, served over in-memory transports. Against a running
// server (toolgate -offline prints a key):
//
//	go run ./examples/mcpagent -url http://127.0.0.1:8080/mcp -key "$TOOLGATE_KEY"
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/mcpserver"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/storage/memory"
	"github.com/toolgate/toolgate/tools"
	"github.com/toolgate/toolgate/tools/recorded"
)

// agreeable is the stand-in user: it approves, once.
type agreeable struct{}

func (agreeable) Approve(string) (bool, string) { return true, "once" }

func main() {
	url := flag.String("url", "", "a gateway's MCP endpoint (streamable HTTP); empty runs one in process, offline")
	key := flag.String("key", os.Getenv("TOOLGATE_KEY"), "the caller's API key for -url (default $TOOLGATE_KEY)")
	tool := flag.String("tool", "exchange-rates", "the tool to call")
	args := flag.String("args", `{"base":"USD","quotes":"EUR,GBP,JPY"}`, "the call's arguments, a JSON object")
	flag.Parse()
	var arguments map[string]any
	if err := json.Unmarshal([]byte(*args), &arguments); err != nil {
		log.Fatalf("mcpagent: -args: %v", err)
	}
	ctx := context.Background()
	var (
		cs  *mcp.ClientSession
		err error
	)
	if *url == "" {
		cs, err = inProcess(ctx, recorded.Transport(), agreeable{}, os.Stdout)
	} else {
		cs, err = overHTTP(ctx, *url, *key, agreeable{}, os.Stdout)
	}
	if err != nil {
		log.Fatalf("mcpagent: %v", err)
	}
	defer cs.Close()
	if err := Run(ctx, cs, *tool, arguments, os.Stdout); err != nil {
		log.Fatalf("mcpagent: %v", err)
	}
}

// inProcess serves a gateway of the built-in tools, whose upstream requests
// go through transport, to an agent over in-memory transports.
func inProcess(ctx context.Context, transport http.RoundTripper, person Person, out io.Writer) (*mcp.ClientSession, error) {
	reg := registry.New()
	if err := tools.RegisterAll(reg); err != nil {
		return nil, err
	}
	gw, err := toolgate.New(memory.New(), &toolgate.Config{Registry: reg, Transport: transport})
	if err != nil {
		return nil, err
	}
	srv, err := mcpserver.NewServer(gw, "agent-7", nil)
	if err != nil {
		return nil, err
	}
	clientSide, serverSide := mcp.NewInMemoryTransports()
	if _, err := srv.Connect(ctx, serverSide, nil); err != nil {
		return nil, err
	}
	fmt.Fprintln(out, "Connected in process to a gateway over recorded provider answers, as principal agent-7.")
	return NewClient(person, out).Connect(ctx, clientSide, nil)
}

// overHTTP connects to a gateway's MCP endpoint with a caller's key.
func overHTTP(ctx context.Context, url, key string, person Person, out io.Writer) (*mcp.ClientSession, error) {
	if key == "" {
		return nil, fmt.Errorf("-key (or TOOLGATE_KEY) is required with -url")
	}
	transport := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{key: key}}}
	fmt.Fprintf(out, "Connecting to %s.\n", url)
	return NewClient(person, out).Connect(ctx, transport, nil)
}

// bearer sends the caller's key with every request.
type bearer struct{ key string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return http.DefaultTransport.RoundTrip(r)
}
