// Package upstreamtest is a real MCP server, written with go-sdk, for the
// tests of toolgate's upstream MCP support: in process (New), or as a
// child process over stdio (the program in ./cmd/upstreamtest-server).
//
// Its tools each show one thing an upstream can do: answer with structured
// content or content blocks, fail, break its output schema, ask the gateway
// for input, log, take its time, exit mid-call, change a tool's
// description, and report the environment it was started with. It counts
// how many times each tool ran, in memory or, given a state directory, in
// files that outlive the process.
package upstreamtest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options configure a Server.
type Options struct {
	// StateDir, when set, keeps the counts and echo's description in files
	// there, so that a server started again continues them; "flaky" exits
	// the process on its first run only then.
	StateDir string
}

// Server is the test MCP server.
type Server struct {
	MCP *mcp.Server
	dir string

	mu     sync.Mutex
	counts map[string]int
}

// Tool names.
const (
	Echo           = "echo"            // structured {text}; claims readOnly
	WriteNote      = "write_note"      // content "saved: <note>"; claims readOnly, falsely
	Flaky          = "flaky"           // exits the process on its first run (with a StateDir), then answers {attempt}
	Slow           = "slow"            // sleeps ms, then answers content "done"
	BadOutput      = "bad_output"      // declares {n: integer}, answers {n: "many"}
	Fail           = "fail"            // isError, "disk full at /srv/data"
	Blocks         = "blocks"          // a text and an image block
	Big            = "big"             // `blocks` text blocks (1) of `bytes` bytes
	AskRoots       = "ask_roots"       // asks the client for its roots
	Log            = "log"             // sends a log message and progress, then answers content
	SetDescription = "set_description" // gives tool `tool` the description `description`
	Env            = "env"             // structured {env: {NAME: value}}
	Untyped        = "untyped"         // structured {"anything": [1, 2]}, of no declared schema
)

// EchoDescription is the echo tool's description as first served.
const EchoDescription = "Echoes the text it is given."

// New returns the test server.
func New(opts *Options) *Server {
	s := &Server{counts: map[string]int{}}
	if opts != nil {
		s.dir = opts.StateDir
	}
	s.MCP = mcp.NewServer(&mcp.Implementation{Name: "upstreamtest", Version: "1"}, &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}, Logging: &mcp.LoggingCapabilities{}},
	})
	description := EchoDescription
	if s.dir != "" {
		if raw, err := os.ReadFile(filepath.Join(s.dir, "echo.description")); err == nil {
			description = string(raw)
		}
	}
	s.addEcho(description)
	s.add(&mcp.Tool{Name: WriteNote, Title: "Write a note", Description: "Saves a note.",
		InputSchema: obj(`{"note":{"type":"string"}}`, "note"),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, in map[string]any, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text(fmt.Sprintf("saved: %v", in["note"])), nil
		})
	s.add(&mcp.Tool{Name: Flaky, Description: "Dies on its first run.", InputSchema: obj(`{}`),
		OutputSchema: obj(`{"attempt":{"type":"integer"}}`, "attempt")},
		func(ctx context.Context, _ map[string]any, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			n := s.Count(Flaky)
			if n == 1 && s.dir != "" {
				os.Exit(3)
			}
			return &mcp.CallToolResult{StructuredContent: map[string]any{"attempt": n}}, nil
		})
	s.add(&mcp.Tool{Name: Slow, Description: "Takes its time.", InputSchema: obj(`{"ms":{"type":"integer"}}`, "ms")},
		func(ctx context.Context, in map[string]any, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ms, _ := in["ms"].(float64)
			select {
			case <-time.After(time.Duration(ms) * time.Millisecond):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return text("done"), nil
		})
	s.add(&mcp.Tool{Name: BadOutput, Description: "Breaks its output schema.", InputSchema: obj(`{}`),
		OutputSchema: obj(`{"n":{"type":"integer"}}`, "n")},
		func(context.Context, map[string]any, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{StructuredContent: map[string]any{"n": "many"}}, nil
		})
	s.add(&mcp.Tool{Name: Fail, Description: "Fails.", InputSchema: obj(`{}`)},
		func(context.Context, map[string]any, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			r := text("disk full at /srv/data")
			r.IsError = true
			return r, nil
		})
	s.add(&mcp.Tool{Name: Blocks, Description: "Answers a text and an image.", InputSchema: obj(`{}`)},
		func(context.Context, map[string]any, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.TextContent{Text: "a picture:"},
				&mcp.ImageContent{Data: []byte("\x89PNG"), MIMEType: "image/png"},
			}}, nil
		})
	s.add(&mcp.Tool{Name: Big, Description: "Answers as much text as asked, in one or more blocks.",
		InputSchema: obj(`{"bytes":{"type":"integer"},"blocks":{"type":"integer"}}`, "bytes")},
		func(_ context.Context, in map[string]any, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			n, _ := in["bytes"].(float64)
			blocks, _ := in["blocks"].(float64)
			r := &mcp.CallToolResult{}
			for range max(1, int(blocks)) {
				r.Content = append(r.Content, &mcp.TextContent{Text: strings.Repeat("x", int(n))})
			}
			return r, nil
		})
	s.add(&mcp.Tool{Name: AskRoots, Description: "Asks the client for its roots.", InputSchema: obj(`{}`)},
		func(_ context.Context, _ map[string]any, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if len(req.Params.InputResponses) == 0 {
				return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"roots": &mcp.ListRootsParams{}}}, nil
			}
			return text("got roots"), nil
		})
	s.add(&mcp.Tool{Name: Log, Description: "Logs, then answers.", InputSchema: obj(`{}`)},
		func(ctx context.Context, _ map[string]any, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "warning", Logger: "upstreamtest", Data: "a log message from upstreamtest"})
			return text("logged"), nil
		})
	s.add(&mcp.Tool{Name: SetDescription, Description: "Changes a tool's description.",
		InputSchema: obj(`{"tool":{"type":"string"},"description":{"type":"string"}}`, "tool", "description")},
		func(_ context.Context, in map[string]any, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if in["tool"] != Echo {
				r := text("only echo's description can be changed")
				r.IsError = true
				return r, nil
			}
			s.SetEchoDescription(fmt.Sprint(in["description"]))
			return text("changed"), nil
		})
	s.add(&mcp.Tool{Name: Env, Description: "Reports its environment.", InputSchema: obj(`{}`),
		OutputSchema: obj(`{"env":{"type":"object","additionalProperties":{"type":"string"}}}`, "env")},
		func(context.Context, map[string]any, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			env := map[string]any{}
			for _, kv := range os.Environ() {
				k, v, _ := strings.Cut(kv, "=")
				env[k] = v
			}
			return &mcp.CallToolResult{StructuredContent: map[string]any{"env": env}}, nil
		})
	s.add(&mcp.Tool{Name: Untyped, Description: "Answers structured content it declares no schema for.", InputSchema: obj(`{}`)},
		func(context.Context, map[string]any, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{StructuredContent: map[string]any{"anything": []any{1, 2}},
				Content: []mcp.Content{&mcp.TextContent{Text: `{"anything":[1,2]}`}}}, nil
		})
	return s
}

// SetEchoDescription changes the echo tool's description; the server tells
// its clients that its tools changed. With a StateDir, servers started
// later serve the new description too.
func (s *Server) SetEchoDescription(description string) {
	if s.dir != "" {
		_ = os.WriteFile(filepath.Join(s.dir, "echo.description"), []byte(description), 0o600)
	}
	s.addEcho(description)
}

func (s *Server) addEcho(description string) {
	s.add(&mcp.Tool{Name: Echo, Title: "Echo", Description: description,
		InputSchema:  obj(`{"text":{"type":"string"}}`, "text"),
		OutputSchema: obj(`{"text":{"type":"string"}}`, "text"),
		Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true}},
		func(_ context.Context, in map[string]any, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{StructuredContent: map[string]any{"text": in["text"]}}, nil
		})
}

// add adds a tool whose calls are counted, with its arguments decoded.
func (s *Server) add(t *mcp.Tool, h func(context.Context, map[string]any, *mcp.CallToolRequest) (*mcp.CallToolResult, error)) {
	name := t.Name
	s.MCP.AddTool(t, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in map[string]any
		if len(req.Params.Arguments) > 0 {
			if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
				return nil, err
			}
		}
		if name != Flaky {
			s.Count(name)
		}
		return h(ctx, in, req)
	})
}

// Count counts one run of tool and returns how many there were.
func (s *Server) Count(tool string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.read(tool) + 1
	s.counts[tool] = n
	if s.dir != "" {
		_ = os.WriteFile(filepath.Join(s.dir, tool+".count"), []byte(strconv.Itoa(n)), 0o600)
	}
	return n
}

// Runs is how many times tool ran.
func (s *Server) Runs(tool string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.read(tool)
}

func (s *Server) read(tool string) int {
	if s.dir == "" {
		return s.counts[tool]
	}
	return RunsIn(s.dir, tool)
}

// RunsIn is how many times tool ran in the servers that kept their state
// in dir.
func RunsIn(dir, tool string) int {
	raw, err := os.ReadFile(filepath.Join(dir, tool+".count"))
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(raw)))
	return n
}

// Tools are the names of the server's tools, sorted.
func Tools() []string {
	names := []string{Echo, WriteNote, Flaky, Slow, BadOutput, Fail, Blocks, Big, AskRoots, Log, SetDescription, Env, Untyped}
	slices.Sort(names)
	return names
}

func obj(props string, required ...string) json.RawMessage {
	req, _ := json.Marshal(required)
	if required == nil {
		req = []byte("[]")
	}
	return json.RawMessage(`{"type":"object","properties":` + props + `,"required":` + string(req) + `}`)
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}
