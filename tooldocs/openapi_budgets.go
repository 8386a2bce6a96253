package tooldocs

import (
	"github.com/toolgate/toolgate/httpapi"
	"github.com/toolgate/toolgate/internal/httpx"
	"github.com/toolgate/toolgate/toolgatetype"
)

// budgetSpendPath is the spend route of a budget as an OpenAPI path
// template.
var budgetSpendPath = httpapi.BudgetSpendPath("{id}")

// budgetSchemas are the named schemas of budgets: a budget's state (an
// element of GET /v1/budgets and of a quote's controls.budgets), the
// budget that refused a call, and a spend summary, with references to one
// another under prefix.
func budgetSchemas(prefix string) map[string]any {
	ref := func(name string) map[string]any { return map[string]any{"$ref": prefix + name} }
	object := func(required []string, props map[string]any) map[string]any {
		return map[string]any{"type": "object", "required": required, "properties": props}
	}
	amount := func(description string) map[string]any {
		return map[string]any{"type": "string", "pattern": `^[0-9]+\.[0-9]{4}$`, "description": description + " (USD, decimal text with 4 decimals)"}
	}
	windowKind := map[string]any{"type": "string", "enum": []any{toolgatetype.BudgetDaily, toolgatetype.BudgetWeekly, toolgatetype.BudgetMonthly},
		"description": "daily: the calendar day; weekly: the ISO week, from Monday; monthly: the calendar month; each in the budget's time zone."}

	defs := map[string]any{}
	defs["BudgetWindow"] = object([]string{"limitUsd", "usedUsd", "remainingUsd", "resetsAt"}, map[string]any{
		"limitUsd":     amount("The window's limit"),
		"usedUsd":      amount("Charged in the window, plus what calls in flight or of unknown outcome hold"),
		"remainingUsd": amount("What is left before the limit"),
		"resetsAt":     map[string]any{"type": "string", "format": "date-time", "description": "When the window ends and the next begins."},
	})
	defs["Budget"] = object([]string{"id", "name", "parent", "timeZone", "windows"}, map[string]any{
		"id":     map[string]any{"type": "string", "pattern": "^[a-z0-9_-]{1,64}$"},
		"name":   map[string]any{"type": "string", "description": "What people call the budget."},
		"parent": map[string]any{"type": []any{"string", "null"}, "description": "The budget this one counts in too; null for a root."},
		"timeZone": map[string]any{"type": "string", "examples": []any{"Europe/Berlin", "UTC"},
			"description": "The IANA time zone whose calendar the windows and the spend's days follow; UTC when the budget names none."},
		"windows": map[string]any{"type": "object", "additionalProperties": false,
			"description": "Only the windows that have a limit.",
			"properties": map[string]any{
				string(toolgatetype.BudgetDaily):   ref("BudgetWindow"),
				string(toolgatetype.BudgetWeekly):  ref("BudgetWindow"),
				string(toolgatetype.BudgetMonthly): ref("BudgetWindow"),
			}},
	})
	defs["BudgetList"] = object([]string{"budgets"}, map[string]any{
		"budgets": map[string]any{"type": "array", "items": ref("Budget"),
			"description": "The budgets that name the approver, and their descendants, in configuration order."},
	})
	defs["BudgetRefusal"] = object([]string{"id", "window", "limitUsd", "usedUsd", "requestedUsd", "resetsAt"}, map[string]any{
		"id":           map[string]any{"type": "string", "description": "The budget short: the first, nearest the principal."},
		"window":       windowKind,
		"tool":         map[string]any{"type": "string", "description": "The tool, when the limit is the budget's limit on it."},
		"limitUsd":     amount("The window's limit"),
		"usedUsd":      amount("Used in the window"),
		"requestedUsd": amount("What the call would cost"),
		"resetsAt":     map[string]any{"type": "string", "format": "date-time", "description": "When the window resets."},
	})
	defs["SpendGroup"] = object([]string{"key", "totalUsd", "count"}, map[string]any{
		"key":      map[string]any{"type": "string", "description": "The tool's slug, the day (YYYY-MM-DD) or the principal, by groupBy."},
		"totalUsd": amount("Charged"),
		"count":    map[string]any{"type": "integer", "minimum": 0, "description": "Charged executions."},
	})
	defs["SpendSummary"] = object([]string{"since", "until", "groupBy", "totalUsd", "groups"}, map[string]any{
		"since":    map[string]any{"type": "string", "format": "date-time"},
		"until":    map[string]any{"type": "string", "format": "date-time"},
		"groupBy":  map[string]any{"type": "string", "enum": []any{toolgatetype.SpendByTool, toolgatetype.SpendByDay, toolgatetype.SpendByPrincipal}},
		"totalUsd": amount("Charged in all"),
		"groups":   map[string]any{"type": "array", "items": ref("SpendGroup")},
	})
	return defs
}

// budgetCodes are the codes the budgets' routes answer with beyond those
// of the quote, the call and the receipts.
var budgetCodes = []toolgatetype.Code{toolgatetype.CodeApproverRequired}

// budgetPaths are the OpenAPI path items of the budgets' routes, which an
// approver's key reads.
func budgetPaths(schemaRef func(string) map[string]any, errorResponse func(status int, description string, codes ...toolgatetype.Code) map[string]any) map[string]any {
	jsonBody := func(schema any) map[string]any {
		return map[string]any{"application/json": map[string]any{"schema": schema}}
	}
	errorRef := func(status int) map[string]any {
		return map[string]any{"$ref": "#/components/responses/" + errorResponseName(status)}
	}
	forbidden := errorResponse(403, "A caller's key was given: the route needs an approver's; or the access token grants no approving.",
		toolgatetype.CodeApproverRequired, httpx.CodeInsufficientScope)
	// from and to take a day of the budget's calendar or an instant; the
	// gateway works out where the day begins and ends in the budget's zone.
	dateOrInstant := map[string]any{"anyOf": []any{
		map[string]any{"type": "string", "format": "date"},
		map[string]any{"type": "string", "format": "date-time"},
	}}
	return map[string]any{
		httpapi.BudgetsPath: map[string]any{"get": map[string]any{
			"operationId": "listBudgets",
			"summary":     "The budgets an approver oversees",
			"description": "With an approver key: the budgets that name the approver and their descendants, each window that has a limit with what is used in it (charged calls and the amounts of calls in flight or of unknown outcome) and when it resets.",
			"responses": map[string]any{
				"200": map[string]any{"description": "The budgets.", "content": jsonBody(schemaRef("BudgetList"))},
				"401": errorRef(401),
				"403": forbidden,
				"429": errorRef(429),
				"500": errorRef(500),
			},
		}},
		budgetSpendPath: map[string]any{"get": map[string]any{
			"operationId": "budgetSpend",
			"summary":     "What a budget's calls were charged",
			"description": "With an approver key the budget names (directly or through an ancestor): what its calls were charged, its teams' included, over the whole days of its calendar that [from, to) touches, grouped by day (in its time zone), principal or tool. Charged calls only.",
			"parameters": []any{
				map[string]any{"name": "id", "in": "path", "required": true, "description": "The budget's id.", "schema": map[string]any{"type": "string"}},
				map[string]any{"name": "groupBy", "in": "query", "required": false, "description": "What to group by.",
					"schema": map[string]any{"type": "string", "enum": []any{toolgatetype.SpendByDay, toolgatetype.SpendByPrincipal, toolgatetype.SpendByTool}}},
				map[string]any{"name": "from", "in": "query", "required": false,
					"description": "The first day counted: a date YYYY-MM-DD of the budget's calendar, or an RFC 3339 instant whose day, in the budget's time zone, is the first. By default the start of the budget's current window when its limits are of one window only (a weekly budget's ISO week, a daily budget's day, in its time zone), else of its current month.",
					"schema":      dateOrInstant},
				map[string]any{"name": "to", "in": "query", "required": false,
					"description": "The last day counted: a date YYYY-MM-DD of the budget's calendar, itself included (from=2026-11-01&to=2026-11-30 is November in the budget's zone), or an RFC 3339 instant after from, the day holding the instant just before it being the last. Now by default.",
					"schema":      dateOrInstant},
			},
			"responses": map[string]any{
				"200": map[string]any{"description": "The spend, in the shape of /v1/spend: since and until are the bounds of the days counted.", "content": jsonBody(schemaRef("SpendSummary"))},
				"400": errorResponse(400, "groupBy is not day, principal or tool, from or to is neither a date YYYY-MM-DD nor an RFC 3339 instant, to is not after from (or its day before from's), or a parameter is given twice; error.parameter names it.",
					toolgatetype.CodeInvalidRequest),
				"401": errorRef(401),
				"403": forbidden,
				"404": errorResponse(404, "No such budget, or one the approver does not oversee: the two are not told apart.", toolgatetype.CodeNotFound),
				"429": errorRef(429),
				"500": errorRef(500),
			},
		}},
	}
}
