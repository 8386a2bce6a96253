// Package toolrun runs an admitted call of a tool against its provider and
// turns whatever comes back into the call's execution: completed with an
// output normalized and checked against the tool's output schema, failed,
// or ambiguous when the request may have reached the provider without an
// answer coming back.
package toolrun

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/toolgate/toolgate/internal/jsonbuf"
	"github.com/toolgate/toolgate/internal/tokenexchange"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
	"github.com/toolgate/toolgate/upstream"
)

// Runner calls providers: over HTTP through Upstream, or by a tool's own
// Invoke.
type Runner struct {
	Upstream *upstream.Client
	// Finished, when set, is told how long each invoked tool took.
	Finished func(ctx context.Context, v *registry.Version, d time.Duration)
	// Exchanger gets, and keeps, the tokens exchanged for callers'
	// (UpstreamToken).
	Exchanger tokenexchange.Exchanger
}

// Ref is how an execution names its tool.
func Ref(t *registry.Tool) toolgatetype.ToolRef {
	return toolgatetype.ToolRef{ID: t.ID, Slug: t.Slug, Name: t.Name}
}

// Call calls the provider and turns whatever comes back into an
// execution result, with the HTTP status of the provider's answer (0 when
// none came). Nothing the provider returns reaches anything but the output
// field, and only after normalization and validation.
func (r *Runner) Call(ctx context.Context, v *registry.Version, q storage.Quote, id uuid.UUID, input []byte, abandon *registry.UpstreamError) (toolgatetype.Execution, int) {
	exec := NewExecution(v, q, id)
	status := 0
	fail := func(err error) (toolgatetype.Execution, int) {
		var ue *registry.UpstreamError
		if !errors.As(err, &ue) {
			ue = registry.Upstreamf(registry.CodeUpstreamInvalidResponse, "the provider's answer could not be read as this tool's output")
		}
		if ue.Sent && !v.RetrySafe() {
			return Ambiguous(exec, v, ue.Message), status
		}
		exec.Error = &toolgatetype.ExecutionError{Code: ue.Code, Message: ue.Message}
		if ue.RetryAfter > 0 {
			exec.Error.RetryAfterSeconds = int((ue.RetryAfter + time.Second - 1) / time.Second)
		}
		return exec, status
	}
	if abandon != nil {
		return fail(abandon)
	}
	if v.Output == nil {
		return fail(registry.Upstreamf(registry.CodeOutputInvalid, "%s declares no output schema, so its output cannot be checked", v.Tool.Slug))
	}
	if v.Tool.Invoke != nil {
		raw, err := r.invoke(ctx, v, input)
		if err != nil {
			return fail(err)
		}
		exec.Status, exec.Output = toolgatetype.StatusCompleted, raw
		return exec, status
	}
	upReq, err := v.Tool.BuildRequest(ctx, v.Origin, input)
	if err != nil {
		return fail(registry.Upstreamf(registry.CodeUpstreamUnavailable, "the upstream request could not be built"))
	}
	// The breaker holds back only this principal for failures only it
	// sees (see upstream.WithPrincipal).
	resp, err := r.Upstream.Do(upstream.WithPrincipal(ctx, q.Principal), v, upReq)
	status = resp.StatusCode
	if err != nil {
		return fail(err)
	}
	if !utf8.Valid(resp.Body) {
		// Decoders would quietly replace the bad bytes; an answer that is
		// not text is not an answer.
		return fail(registry.Upstreamf(registry.CodeUpstreamInvalidResponse, "the provider's answer is not valid UTF-8"))
	}
	out, err := normalize(v, resp)
	if err != nil {
		return fail(err)
	}
	raw, err := json.Marshal(out)
	if err != nil {
		return fail(err)
	}
	if failures := v.Output.Validate(raw, "output"); failures != nil {
		return fail(registry.Upstreamf(registry.CodeOutputInvalid, "the provider's answer does not match the tool's output schema at %s: %s", failures[0].Path, failures[0].Message))
	}
	exec.Status = toolgatetype.StatusCompleted
	exec.Output = raw
	return exec, status
}

// NewExecution is the execution of a call under q before it has an
// outcome: failed, with the quoted amounts and no output.
func NewExecution(v *registry.Version, q storage.Quote, id uuid.UUID) toolgatetype.Execution {
	return toolgatetype.Execution{
		ID:     id.String(),
		Tool:   Ref(v.Tool),
		Status: toolgatetype.StatusFailed,
		Cost:   toolgatetype.Cost{PriceUSD: toolgatetype.FormatUSD(q.PriceUSD), FeeUSD: toolgatetype.FormatUSD(q.FeeUSD), TotalUSD: toolgatetype.FormatUSD(q.TotalUSD), Currency: "USD"},
		Output: json.RawMessage("null"),
	}
}

// Ambiguous turns exec into the execution of a call whose request may have
// reached the provider without a complete answer coming back, for a tool
// that is not retry-safe: whether it ran is unknown, so it is neither
// failed (which would invite running it again) nor charged. why says what
// happened, in the gateway's words.
func Ambiguous(exec toolgatetype.Execution, v *registry.Version, why string) toolgatetype.Execution {
	exec.Status = toolgatetype.StatusAmbiguous
	exec.Output = json.RawMessage("null")
	exec.Error = &toolgatetype.ExecutionError{
		Code: toolgatetype.CodeOutcomeUnknown,
		Message: fmt.Sprintf("the outcome of this call of %s is unknown: %s, after the request may have reached the provider. "+
			"Do not call it again: a retry with the same Idempotency-Key returns this result, and one with a new key could run it twice. "+
			"Its amount stays reserved, not charged, until an approver of this principal resolves execution %s as completed or failed.",
			v.Tool.Slug, strings.TrimSuffix(why, "."), exec.ID),
	}
	return exec
}

// normalize runs the tool's mapping, turning a panic on hostile input into
// a failed execution rather than a crashed gateway.
func normalize(v *registry.Version, resp registry.UpstreamResponse) (out any, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = registry.Upstreamf(registry.CodeUpstreamInvalidResponse, "the provider's answer could not be read as this tool's output")
		}
	}()
	return v.Tool.Normalize(resp)
}

// Encode is json.Marshal(exec) without encoding/json going over a
// completed execution's output a second time (json.RawMessage is re-checked
// and re-compacted byte by byte). That output comes from json.Marshal, so it
// is already exactly what Marshal would write, and is spliced in as it is.
func Encode(exec toolgatetype.Execution) ([]byte, error) {
	if exec.Status != toolgatetype.StatusCompleted {
		return json.Marshal(exec)
	}
	out := exec.Output
	exec.Output = nil // written as null
	// The head is only copied into body, so it is encoded in a pooled buffer.
	buf := jsonbuf.Get()
	defer buf.Release()
	head, err := buf.Marshal(exec)
	if err != nil {
		return nil, err
	}
	// The marker cannot occur inside a string, where every quote is escaped.
	const marker, null = `,"output":null,"error":`, `null`
	i := bytes.Index(head, []byte(marker))
	if i < 0 {
		exec.Output = out
		return json.Marshal(exec)
	}
	cut := i + len(marker) - len(`,"error":`) - len(null)
	body := make([]byte, 0, len(head)+len(out))
	body = append(body, head[:cut]...)
	body = append(body, out...)
	return append(body, head[cut+len(null):]...), nil
}
