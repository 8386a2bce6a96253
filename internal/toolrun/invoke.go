package toolrun

import (
	"context"
	"encoding/json"
	"time"

	"github.com/toolgate/toolgate/registry"
)

// callerDeadlineKey holds, in an admitted call's context, the deadline its
// caller set, which the cancellation the call no longer answers to would
// otherwise take with it.
type callerDeadlineKey struct{}

// Detach is ctx cut loose from its caller's cancellation, as an
// admitted call is (see toolgate.Gateway.Call), keeping the caller's deadline where a tool
// run by Invoke can find it.
func Detach(ctx context.Context) context.Context {
	d, ok := ctx.Deadline()
	ctx = context.WithoutCancel(ctx)
	if ok {
		ctx = context.WithValue(ctx, callerDeadlineKey{}, d)
	}
	return ctx
}

// invoke runs a call of a tool that is not one HTTP request (Tool.Invoke)
// and returns its output as JSON. The caller's deadline bounds it, beside
// the tool's own: such a tool is an upstream MCP server's, whose calls are
// bounded by both. A panic on hostile input is a failed call, not a crashed
// gateway.
func (r *Runner) invoke(ctx context.Context, v *registry.Version, input []byte) (raw []byte, err error) {
	if d, ok := ctx.Value(callerDeadlineKey{}).(time.Time); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d)
		defer cancel()
	}
	defer func() {
		if r := recover(); r != nil {
			raw, err = nil, registry.Upstreamf(registry.CodeUpstreamInvalidResponse, "the provider's answer could not be read as this tool's output")
		}
	}()
	var start time.Time
	if r.Finished != nil {
		start = time.Now()
	}
	out, err := v.Tool.Invoke(ctx, input)
	if r.Finished != nil {
		r.Finished(ctx, v, time.Since(start))
	}
	if err != nil {
		return nil, err
	}
	if raw, err = json.Marshal(out); err != nil {
		return nil, registry.Upstreamf(registry.CodeUpstreamInvalidResponse, "the provider's answer could not be read as this tool's output")
	}
	if failures := v.Output.Validate(raw, "output"); failures != nil {
		return nil, registry.Upstreamf(registry.CodeOutputInvalid, "the provider's answer does not match the tool's output schema at %s: %s", failures[0].Path, failures[0].Message)
	}
	return raw, nil
}
