package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Person is who the agent asks when the gateway wants a call approved: a
// real runtime shows the question to its user.
type Person interface {
	// Approve answers the gateway's question. remember is "once", or
	// "never_ask" to approve this exact tool version for good.
	Approve(question string) (approve bool, remember string)
}

// NewClient returns an MCP client that hands the gateway's approval forms
// to person and prints what happens to out.
func NewClient(person Person, out io.Writer) *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "mcpagent", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			approve, remember := person.Approve(req.Params.Message)
			fmt.Fprintf(out, "   the gateway asks: %q -> approve=%t remember=%s\n", req.Params.Message, approve, remember)
			if !approve {
				return &mcp.ElicitResult{Action: "decline"}, nil
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true, "remember": remember}}, nil
		},
	})
}

// Run lists the session's tools and calls tool with args, printing both.
// A tool error (a refusal, a failed call) is printed, not returned: a model
// would read it and decide what to do next.
func Run(ctx context.Context, cs *mcp.ClientSession, tool string, args map[string]any, out io.Writer) error {
	fmt.Fprintln(out, "1. The tools this agent may call:")
	var names []string
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return err
		}
		names = append(names, t.Name)
		fmt.Fprintf(out, "   - %s (%s): $%v a call, approval %v\n", t.Name, t.Title, t.Meta["toolgate/totalUsd"], t.Meta["toolgate/approvalRequirement"])
	}
	if !slices.Contains(names, tool) {
		return fmt.Errorf("the gateway offers no tool %q", tool)
	}

	raw, err := json.Marshal(args)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "2. Call %s %s\n", tool, raw)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return err
	}
	if res.IsError {
		fmt.Fprintf(out, "3. The call did not run:\n   %s\n", textOf(res))
		return nil
	}
	result, err := json.MarshalIndent(res.StructuredContent, "   ", "  ")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "3. Execution %v cost %v; the output, untrusted data from the provider:\n   %s\n",
		res.Meta["toolgate/executionId"], costOf(res.Meta["toolgate/cost"]), result)
	return nil
}

func textOf(res *mcp.CallToolResult) string {
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			return t.Text
		}
	}
	return ""
}

func costOf(v any) string {
	if m, ok := v.(map[string]any); ok {
		return fmt.Sprintf("$%v", m["totalUsd"])
	}
	return "unknown"
}
