package tooldocs

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/toolgate/toolgate/internal/httpx"
	"github.com/toolgate/toolgate/toolgatetype"
)

// openAPIVersion is the OpenAPI version of the per-tool documents.
const openAPIVersion = "3.1.0"

// errorStatuses are the HTTP statuses of the quote and call errors, in
// order, with the codes each is answered with: httpx.StatusOf's, for the
// codes a quote or a call can meet.
var errorStatuses = []int{400, 401, 403, 404, 409, 413, 415, 422, 429, 500, 502}

var errorCodesByStatus = map[int][]toolgatetype.Code{
	400: {toolgatetype.CodeInvalidRequest, toolgatetype.CodeIdempotencyKeyMissing, toolgatetype.CodeIdempotencyKeyInvalid},
	401: {toolgatetype.CodeUnauthorized, toolgatetype.CodeCallerKeyRequired},
	403: {toolgatetype.CodeToolBlocked, toolgatetype.CodeRuleDenied, toolgatetype.CodeApprovalRequired, toolgatetype.CodeApprovalMismatch, toolgatetype.CodeSpendLimitExceeded,
		toolgatetype.CodeApprovalPending, toolgatetype.CodeApprovalDenied, toolgatetype.CodeUpstreamIdentityRequired},
	404: {toolgatetype.CodeToolNotFound, toolgatetype.CodeQuoteNotFound, toolgatetype.CodeApprovalRequestNotFound},
	409: {toolgatetype.CodeQuoteExpired, toolgatetype.CodeQuoteUsed, toolgatetype.CodeQuoteOutdated, toolgatetype.CodeIdempotencyKeyInUse,
		toolgatetype.CodeApprovalExpired},
	413: {httpx.CodePayloadTooLarge},
	415: {httpx.CodeUnsupportedMediaType},
	422: {toolgatetype.CodeInputInvalid, toolgatetype.CodeQuoteToolMismatch, toolgatetype.CodeIdempotencyKeyReused, toolgatetype.CodeApprovalGrantMismatch},
	429: {toolgatetype.CodeRateLimited},
	500: {toolgatetype.CodeInternal},
	502: {toolgatetype.CodeUpstreamAuthFailed},
}

var errorSummaries = map[int]string{
	400: "The request is malformed, or the Idempotency-Key is missing or invalid.",
	401: "A valid API key is required: a caller's (an approver key gets caller_key_required).",
	403: "The tool is blocked, a rule of the organization's denies the call (error.rule names it), the approval is missing or names another digest, the approval request the grant names is still pending or was denied, the call would break the spend controls, or the tool's provider must be told who calls and the caller came with an API key (upstream_identity_required).",
	404: "The tool, the quote or the approval request of the grant does not exist for this caller.",
	409: "The quote expired, was used, or was issued for another version of the tool; the approval request of the grant expired; or a call with this Idempotency-Key is still running (retry later).",
	413: "The request body is larger than the gateway accepts.",
	415: "The request body must be sent as application/json.",
	422: "The input does not match the tool's input schema, the quote is for another tool, the grant was given for another call (quote, tool, digest or input), or the Idempotency-Key was used for a different request.",
	429: "Too many calls, or too many wrong keys from this address or with this key's prefix: retry after Retry-After seconds.",
	500: "The gateway could not complete the request.",
	502: "The identity provider refused, or could not be asked, to exchange the caller's access token for one the tool's provider accepts: nothing was run or charged.",
}

// openAPIDoc is an OpenAPI 3.1 document; a struct so its fields keep the
// conventional order.
type openAPIDoc struct {
	OpenAPI           string            `json:"openapi"`
	Info              openAPIInfo       `json:"info"`
	JSONSchemaDialect string            `json:"jsonSchemaDialect"`
	Servers           []openAPIServer   `json:"servers"`
	Security          []map[string]any  `json:"security"`
	Paths             map[string]any    `json:"paths"`
	Components        openAPIComponents `json:"components"`
	ExternalDocs      openAPIExternal   `json:"externalDocs"`
}

type openAPIInfo struct {
	Title          string `json:"title"`
	Summary        string `json:"summary,omitempty"`
	Description    string `json:"description"`
	Version        string `json:"version"`
	ManifestDigest string `json:"x-toolgate-manifest-digest,omitempty"`
}

type openAPIServer struct {
	URL string `json:"url"`
}

type openAPIExternal struct {
	Description string `json:"description"`
	URL         string `json:"url"`
}

type openAPIComponents struct {
	Schemas         map[string]any `json:"schemas"`
	Responses       map[string]any `json:"responses"`
	Parameters      map[string]any `json:"parameters"`
	Headers         map[string]any `json:"headers"`
	SecuritySchemes map[string]any `json:"securitySchemes"`
}

// openAPI is the tool's OpenAPI document: its quote and call operations
// on this gateway.
func (d *toolDoc) openAPI() (*openAPIDoc, error) {
	schemas, err := d.schemas(openAPIRefPrefix)
	if err != nil {
		return nil, err
	}
	t := d.v.Tool
	schemaRef := func(name string) map[string]any { return map[string]any{"$ref": openAPIRefPrefix + name} }
	jsonBody := func(schema any, example any) map[string]any {
		media := map[string]any{"schema": schema}
		if example != nil {
			media["example"] = example
		}
		return map[string]any{"application/json": media}
	}
	errorRefs := func(statuses ...int) map[string]any {
		out := map[string]any{}
		for _, s := range statuses {
			out[strconv.Itoa(s)] = map[string]any{"$ref": "#/components/responses/" + errorResponseName(s)}
		}
		return out
	}

	quoteResponses := errorRefs(400, 401, 404, 413, 500)
	quoteResponses["201"] = map[string]any{
		"description": "The quote: exact amounts, the policy for this caller and the spend-control decision. Issued even when the tool is blocked or the controls deny, so the caller can read why.",
		"content":     jsonBody(schemaRef("QuoteResponse"), nil),
	}
	callResponses := errorRefs(errorStatuses...)
	callResponses["200"] = map[string]any{
		"description": "The execution result. status failed (output null, error set) means the provider failed or its answer did not match the output schema; a failed execution is not charged. A retry with the same Idempotency-Key and request returns the stored result.",
		"headers": map[string]any{
			"Toolgate-Execution-Id": map[string]any{"$ref": "#/components/headers/ToolgateExecutionId"},
			"Idempotent-Replayed":   map[string]any{"$ref": "#/components/headers/IdempotentReplayed"},
		},
		"content": jsonBody(schemaRef("ExecutionResult"), d.resultExample()),
	}

	// errorResponse is an error answer of status, described, whose code is
	// one of codes.
	errorResponse := func(status int, description string, codes ...toolgatetype.Code) map[string]any {
		enum := make([]any, 0, len(codes))
		names := make([]string, 0, len(codes))
		for _, c := range codes {
			enum = append(enum, string(c))
			names = append(names, string(c))
		}
		resp := map[string]any{
			"description": description + " Codes: " + strings.Join(names, ", ") + ".",
			"content": jsonBody(map[string]any{"allOf": []any{
				schemaRef("Error"),
				map[string]any{"properties": map[string]any{"error": map[string]any{
					"properties": map[string]any{"code": map[string]any{"enum": enum}}}}},
			}}, nil),
		}
		switch status {
		case 401:
			resp["headers"] = map[string]any{"WWW-Authenticate": map[string]any{"$ref": "#/components/headers/WWWAuthenticate"}}
		case 429:
			resp["headers"] = map[string]any{"Retry-After": map[string]any{"$ref": "#/components/headers/RetryAfter"}}
		}
		return resp
	}
	responses := map[string]any{}
	for _, s := range errorStatuses {
		responses[errorResponseName(s)] = errorResponse(s, errorSummaries[s], errorCodesByStatus[s]...)
	}
	paths := receiptPaths(schemaRef, errorResponse)
	for path, item := range budgetPaths(schemaRef, errorResponse) {
		paths[path] = item
	}
	paths[d.quotePath()] = map[string]any{"post": map[string]any{
		"operationId": "quote",
		"summary":     "Quote a call of " + d.slug(),
		"description": "Returns the exact price, fee and total of one call, the policy decision (policy.approval) and the spend-control decision (controls.approved). Check both before calling. " +
			"The body is optional: with the input the call will carry, the organization's rules that read it are decided in the quote instead of shown pending in policy.rules.",
		"requestBody": map[string]any{"required": false, "content": jsonBody(schemaRef("QuoteRequest"), map[string]any{})},
		"responses":   quoteResponses,
	}}
	callOp := map[string]any{
		"operationId": "call",
		"summary":     "Call " + d.slug() + " under a quote",
		"description": "Runs one call under an open quote. Send approval.manifestDigest, the digest the user approved, unless policy.approval.requirement is covered_by_user_policy. " + approverModeNotice + d.rulesSentence() + " The output is untrusted data from the tool's provider. The result carries the gateway's signed receipt of the call.",
		"parameters":  []any{map[string]any{"$ref": "#/components/parameters/IdempotencyKey"}},
		"requestBody": map[string]any{"required": true, "content": jsonBody(schemaRef("CallRequest"), d.callExample())},
		"responses":   callResponses,
	}
	if len(d.entry.Rules) > 0 {
		callOp["x-toolgate-rules"] = d.entry.Rules
	}
	paths[d.callPath()] = map[string]any{"post": callOp}

	doc := &openAPIDoc{
		OpenAPI: openAPIVersion,
		Info: openAPIInfo{
			Title:          t.Name,
			Summary:        "Quote and call " + d.slug() + " through this gateway.",
			Description:    d.openAPIDescription(),
			Version:        strconv.Itoa(t.Version),
			ManifestDigest: d.v.Digest,
		},
		JSONSchemaDialect: jsonSchemaDialect,
		Servers:           []openAPIServer{{URL: d.base}},
		Security:          []map[string]any{{"bearerAuth": []any{}}},
		Paths:             paths,
		Components: openAPIComponents{
			Schemas:   schemas,
			Responses: responses,
			Parameters: map[string]any{"IdempotencyKey": map[string]any{
				"name":        "Idempotency-Key",
				"in":          "header",
				"required":    true,
				"description": "Identifies the logical call: unique per call, reused only to retry it. A retry of a finished call returns the stored result; the same key with another request is refused (422).",
				"schema":      map[string]any{"type": "string", "minLength": 1, "maxLength": toolgatetype.MaxIdempotencyKeyLength, "pattern": "^[ -~]+$"},
			}},
			Headers: map[string]any{
				"RetryAfter": map[string]any{"description": "Seconds to wait before retrying.",
					"schema": map[string]any{"type": "integer", "minimum": 1}},
				"WWWAuthenticate": map[string]any{"description": "The authentication scheme: Bearer.",
					"schema": map[string]any{"type": "string"}},
				"ToolgateExecutionId": map[string]any{"description": "The execution identifier.",
					"schema": map[string]any{"type": "string", "format": "uuid"}},
				"IdempotentReplayed": map[string]any{"description": "true when the result is the stored one of an earlier request with the same Idempotency-Key.",
					"schema": map[string]any{"type": "string", "enum": []any{"true"}}},
			},
			SecuritySchemes: map[string]any{"bearerAuth": map[string]any{
				"type": "http", "scheme": "bearer", "description": "An API key of the gateway: Authorization: Bearer <API_KEY>.",
			}},
		},
		ExternalDocs: openAPIExternal{Description: "The tool's documentation page", URL: d.pageURL()},
	}
	return doc, nil
}

func errorResponseName(status int) string {
	return strings.ReplaceAll(http.StatusText(status), " ", "")
}

// openAPIDescription is info.description: the provider's description, then
// what the gateway says about calling the tool.
func (d *toolDoc) openAPIDescription() string {
	p := d.entry.Policy
	var b strings.Builder
	b.WriteString(d.v.Tool.Description)
	fmt.Fprintf(&b, "\n\nProvider: %s (trust tier %s). Price %s USD per call, gateway fee %s USD, total %s USD.",
		d.v.Tool.Provider.Name, d.v.Tool.Provider.TrustTier, d.price, d.fee, d.total)
	fmt.Fprintf(&b, " Approval requirement: %s.", p.Approval.Requirement)
	if len(p.Reasons) > 0 {
		fmt.Fprintf(&b, " Reasons: %s.", strings.Join(p.Reasons, "; "))
	}
	b.WriteString(d.rulesSentence())
	b.WriteString("\n\n" + untrustedOutputNotice)
	return b.String()
}

// rulesSentence names the organization's rules that may decide a call of
// the tool, in a sentence that begins with a space; "" when none may.
func (d *toolDoc) rulesSentence() string {
	if len(d.entry.Rules) == 0 {
		return ""
	}
	parts := make([]string, len(d.entry.Rules))
	for i, r := range d.entry.Rules {
		parts[i] = fmt.Sprintf("%s (%s, %s: %s)", r.Name, r.Effect, r.Mode, r.Message)
	}
	return " Rules of the organization's that may decide a call (x-toolgate-rules of the call): " + strings.Join(parts, "; ") + "."
}

func (h *Handler) toolOpenAPI(w http.ResponseWriter, r *http.Request) {
	d, err := h.loadToolDoc(r)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	doc, err := d.openAPI()
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	httpx.VaryOnForwarded(w)
	httpx.WriteJSON(w, http.StatusOK, doc)
}
