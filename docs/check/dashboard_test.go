//go:build unix

package check

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The files the docs ship, relative to this directory.
const (
	dashboardFile = "../grafana/toolgate-dashboard.json"
	alertsFile    = "../prometheus/toolgate-alerts.yml"
)

// promQL parses the expressions of the rules and panels as Prometheus
// would, with no experimental feature.
var promQL = parser.NewParser(parser.Options{})

// scrapeSeries are the series Prometheus adds to every target it scrapes:
// a rule may name them though no server exports them.
var scrapeSeries = map[string]bool{"up": true}

// TestDashboardAndAlertsNameExportedMetrics reads the Grafana dashboard
// and the alerting rules the docs ship, and checks each metric their
// expressions name against what the built server exports on /metrics once
// every kind of event has happened: a call charged, an MCP server
// connected, a budget counted, an approval requested and decided; and with
// the calls waiting to be resolved, of which there are none. A panel
// or rule naming a metric that does not exist, or a metric no panel shows,
// fails it.
func TestDashboardAndAlertsNameExportedMetrics(t *testing.T) {
	t.Parallel()
	rules := alertRules(t)
	dashboard := readDashboard(t)
	exported := exportedMetrics(t, scrapeAfterEveryEvent(t))

	// Where each metric is named, for the messages.
	namedBy := map[string][]string{}
	for _, r := range rules {
		for _, name := range metricNames(t, r.Expr) {
			namedBy[name] = append(namedBy[name], "alert "+r.Alert)
		}
	}
	for where, expr := range dashboard.exprs(t) {
		for _, name := range metricNames(t, expr) {
			namedBy[name] = append(namedBy[name], where)
		}
	}

	t.Run("every metric named is exported", func(t *testing.T) {
		names := slices.Sorted(maps.Keys(namedBy))
		require.NotEmpty(t, names)
		for _, name := range unknownMetrics(exported, names) {
			t.Errorf("%s is named by %s, and the server exports no such metric", name, strings.Join(namedBy[name], ", "))
		}
	})

	t.Run("every toolgate metric has a panel", func(t *testing.T) {
		shown := map[string]bool{}
		for _, expr := range dashboard.exprs(t) {
			for _, name := range metricNames(t, expr) {
				shown[familyOf(exported, name)] = true
			}
		}
		for name, typ := range exported {
			if strings.HasPrefix(name, "toolgate_") && typ != "" && !shown[name] {
				t.Errorf("no panel shows %s", name)
			}
		}
	})

	t.Run("a misspelt metric is caught", func(t *testing.T) {
		// The checker itself: a name one letter off, and a counter read as
		// though it were a histogram, are both reported; their neighbours
		// are not.
		names := metricNames(t, `sum(rate(toolgate_calls_totl[5m])) / sum(rate(toolgate_calls_total[5m]))`)
		assert.Equal(t, []string{"toolgate_calls_totl"}, unknownMetrics(exported, names))
		names = metricNames(t, `histogram_quantile(0.9, rate(toolgate_calls_total_bucket[5m])) + histogram_quantile(0.9, rate(toolgate_call_duration_seconds_bucket[5m]))`)
		assert.Equal(t, []string{"toolgate_calls_total_bucket"}, unknownMetrics(exported, names))
	})
}

// TestAlertRulesSayWhatAndHowBad checks what an operator reads when a rule
// fires: each alert waits a while before firing, says how bad it is, and
// has a summary and a description; and the alerts an operator asked for
// are there.
func TestAlertRulesSayWhatAndHowBad(t *testing.T) {
	t.Parallel()
	var names []string
	for _, r := range alertRules(t) {
		names = append(names, r.Alert)
		assert.NotEmpty(t, r.Alert, "a recording rule in an alerts file: %s", r.Expr)
		assert.Positive(t, r.For, "%s fires on one evaluation", r.Alert)
		assert.Contains(t, []string{"warning", "critical"}, r.Labels["severity"], "%s: severity", r.Alert)
		assert.NotEmpty(t, r.Annotations["summary"], "%s: summary", r.Alert)
		assert.NotEmpty(t, r.Annotations["description"], "%s: description", r.Alert)
	}
	for _, want := range []string{"ToolgateDown", "ToolgateMCPServerDown", "ToolgateAmbiguousCalls", "ToolgateBudgetNearLimit", "ToolgateEventsWaiting", "ToolgateEventsFailed"} {
		assert.Contains(t, names, want)
	}
}

// TestDashboardImports checks what Grafana needs to import the dashboard
// into any instance: a schema version, a Prometheus data source chosen by
// a variable rather than one instance's data source id, job and instance
// variables, and a query on every panel.
func TestDashboardImports(t *testing.T) {
	t.Parallel()
	d := readDashboard(t)
	assert.Positive(t, d.SchemaVersion)
	assert.NotEmpty(t, d.UID)
	variables := map[string]dashboardVariable{}
	for _, v := range d.Templating.List {
		variables[v.Name] = v
	}
	require.Contains(t, variables, "datasource")
	assert.Equal(t, "datasource", variables["datasource"].Type)
	assert.Equal(t, "prometheus", variables["datasource"].Query)
	for _, name := range []string{"job", "instance"} {
		require.Contains(t, variables, name)
		assert.Equal(t, "query", variables[name].Type)
	}
	ids := map[int]bool{}
	for _, p := range d.allPanels() {
		assert.False(t, ids[p.ID], "panel id %d is used twice", p.ID)
		ids[p.ID] = true
		if p.Type == "row" {
			continue
		}
		assert.Equal(t, "${datasource}", p.Datasource.UID, "panel %q: its data source", p.Title)
		assert.NotEmpty(t, p.Targets, "panel %q has no query", p.Title)
		for _, target := range p.Targets {
			assert.NotEmpty(t, target.Expr, "panel %q: an empty query", p.Title)
		}
	}
}

// alertRules parses the rules file as Prometheus loads it: unknown fields,
// expressions that do not parse and templates that do not compile are
// errors.
func alertRules(t *testing.T) []rulefmt.Rule {
	t.Helper()
	groups, errs := rulefmt.ParseFile(alertsFile, false, model.UTF8Validation, promQL, slog.New(slog.DiscardHandler))
	require.Empty(t, errs)
	var rules []rulefmt.Rule
	for _, g := range groups.Groups {
		rules = append(rules, g.Rules...)
	}
	require.NotEmpty(t, rules)
	return rules
}

// dashboard is what the tests read of a Grafana dashboard.
type dashboard struct {
	UID           string           `json:"uid"`
	SchemaVersion int              `json:"schemaVersion"`
	Panels        []dashboardPanel `json:"panels"`
	Templating    struct {
		List []dashboardVariable `json:"list"`
	} `json:"templating"`
}

type dashboardPanel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	} `json:"datasource"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
	Panels []dashboardPanel `json:"panels"` // a collapsed row's
}

type dashboardVariable struct {
	Name  string `json:"name"`
	Type  string `json:"type"`
	Query any    `json:"query"` // a string, or {"query": ...} as Grafana saves it
}

func readDashboard(t *testing.T) *dashboard {
	t.Helper()
	raw, err := os.ReadFile(dashboardFile)
	require.NoError(t, err)
	var d dashboard
	require.NoError(t, json.Unmarshal(raw, &d))
	return &d
}

// allPanels is every panel, those inside collapsed rows too.
func (d *dashboard) allPanels() []dashboardPanel {
	var out []dashboardPanel
	for _, p := range d.Panels {
		out = append(out, p)
		out = append(out, p.Panels...)
	}
	return out
}

// grafanaInterval matches Grafana's interval variables, which stand where
// PromQL wants a duration.
var grafanaInterval = regexp.MustCompile(`\$__(rate_interval|interval|range)\b`)

// labelValues matches a query variable's label_values(selector, label).
var labelValues = regexp.MustCompile(`^label_values\((.+),\s*\w+\)$`)

// exprs are the PromQL expressions of the dashboard, by where they are:
// each panel's queries, and the selectors of its query variables. Grafana's
// interval variables become a duration; variables in label values stay, a
// string to PromQL.
func (d *dashboard) exprs(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, p := range d.allPanels() {
		for i, target := range p.Targets {
			out[fmt.Sprintf("panel %q query %d", p.Title, i+1)] = grafanaInterval.ReplaceAllString(target.Expr, "5m")
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		query, _ := v.Query.(string)
		if q, ok := v.Query.(map[string]any); ok {
			query, _ = q["query"].(string)
		}
		m := labelValues.FindStringSubmatch(query)
		require.NotNil(t, m, "variable %s: a query other than label_values(selector, label): %q", v.Name, query)
		out["variable "+v.Name] = m[1]
	}
	return out
}

// metricNames are the metrics expr selects, as the PromQL parser reads it.
func metricNames(t *testing.T, expr string) []string {
	t.Helper()
	node, err := promQL.ParseExpr(expr)
	require.NoError(t, err, "%s", expr)
	var names []string
	parser.Inspect(node, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		name := vs.Name
		for _, m := range vs.LabelMatchers {
			if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
				name = m.Value
			}
		}
		require.NotEmpty(t, name, "a selector with no metric name in %s", expr)
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
		return nil
	})
	return names
}

// exportedMetrics are the names a query can select in an exposition: each
// family by its name, mapped to its type, and a histogram's or summary's
// series by theirs (_bucket, _sum, _count), mapped to "".
func exportedMetrics(t *testing.T, exposition string) map[string]string {
	t.Helper()
	textParser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := textParser.TextToMetricFamilies(strings.NewReader(exposition))
	require.NoError(t, err)
	out := map[string]string{}
	for name, f := range families {
		out[name] = f.GetType().String()
		switch f.GetType() {
		case dto.MetricType_HISTOGRAM:
			out[name+"_bucket"], out[name+"_sum"], out[name+"_count"] = "", "", ""
		case dto.MetricType_SUMMARY:
			out[name+"_sum"], out[name+"_count"] = "", ""
		}
	}
	return out
}

// familyOf is the family a selectable name belongs to.
func familyOf(exported map[string]string, name string) string {
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && exported[name] == "" && exported[base] != "" {
			return base
		}
	}
	return name
}

// unknownMetrics are the names, sorted, that are neither exported nor
// added by Prometheus' scrape.
func unknownMetrics(exported map[string]string, names []string) []string {
	var out []string
	for _, name := range names {
		if _, ok := exported[name]; !ok && !scrapeSeries[name] {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// scrapeAfterEveryEvent runs the built server with an MCP server, a budget
// and a principal in approver mode, makes each kind of event the metrics
// count happen once, and returns its /metrics. Families of a labelled
// metric appear only once one of their series exists, so each must have
// been touched.
func scrapeAfterEveryEvent(t *testing.T) string {
	t.Helper()
	bin := buildBinaries(t)
	aliceKey := randomKey(t, "tg_test_alice_")
	carolKey := randomKey(t, "tg_test_carol_")
	patKey := randomKey(t, "tg_test_pat_")
	daveKey := randomKey(t, "tg_test_dave_")
	path := writeConfig(t, map[string]any{
		"listen":        "127.0.0.1:0",
		"metricsListen": "127.0.0.1:0",
		// A store that batches, so that toolgate_store_batch_size is
		// exported (the memory store sends nothing anywhere).
		"storage": "sqlite:" + filepath.Join(t.TempDir(), "toolgate.db"),
		"principals": []any{
			map[string]any{"id": "alice", "apiKeys": []string{aliceKey}},
			map[string]any{"id": "carol", "apiKeys": []string{carolKey}, "approvalMode": "approver"},
			map[string]any{"id": "dave", "apiKeys": []string{daveKey}},
		},
		"approvers": []any{map[string]any{"id": "pat", "keys": []string{patKey}, "principals": []string{"carol"}}},
		"budgets": []any{
			map[string]any{"id": "acme", "members": []string{"alice", "carol"}, "dailyLimitUsd": "10.0000"},
			map[string]any{"id": "tiny", "members": []string{"dave"}, "dailyLimitUsd": "0.0001"},
		},
		"trust": map[string]any{"notes.write-note": map[string]any{"paymentVerified": true, "endpointVerified": true}},
		// Rules in audit mode, which change nothing: one matching every
		// call, one failing on every call of a key (no claims), so that
		// the rules' metrics have series.
		"rules": []any{
			map[string]any{"name": "watch-every-call", "effect": "deny", "mode": "audit", "when": "true"},
			map[string]any{"name": "watch-a-claim", "effect": "deny", "mode": "audit", "when": "principal.claims.team == 'x'"},
		},
		"mcpServers": []any{notesServer(bin.upstream, t.TempDir())},
	})
	srv, base := startServer(t, bin.toolgate, []string{"-config", path}, "TG_E2E_NOTES_TOKEN=not-a-real-token")
	metricsURL := strings.TrimPrefix(srv.waitLine("toolgate metrics on ", 10*time.Second), "toolgate metrics on ")

	// A call charged, counting in the budget.
	alice := client{t: t, base: base, key: aliceKey}
	quoteID, digest, _ := alice.quote("notes.write-note")
	r := alice.call("notes.write-note", quoteID, digest, "dash-1", map[string]any{"note": "for the dashboard"})
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	require.Equal(t, "completed", r.json(t)["status"], "%s", r.body)

	// A call refused by a budget.
	dave := client{t: t, base: base, key: daveKey}
	quoteID, digest, _ = dave.quote("notes.write-note")
	r = dave.call("notes.write-note", quoteID, digest, "dash-2", map[string]any{"note": "over the budget"})
	require.Equal(t, http.StatusForbidden, r.status, "%s", r.body)

	// An approval requested and decided.
	carol := client{t: t, base: base, key: carolKey}
	quoteID, _, _ = carol.quote("notes.write-note")
	r = carol.do(http.MethodPost, "/v1/approval-requests", map[string]any{"quoteId": quoteID, "input": map[string]any{"note": "needs pat"}})
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	pat := client{t: t, base: base, key: patKey}
	r = pat.do(http.MethodPost, "/v1/approval-requests/"+r.json(t)["id"].(string)+"/approve", nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)

	// The events are delivered in the background, and the outbox's
	// metrics read at most 10 s before: scrape until they show.
	var exposition string
	wants := []string{
		`toolgate_calls_total{outcome="completed",tool="notes.write-note"} 1`,
		`toolgate_mcp_server_up{server="notes"} 1`,
		`toolgate_approval_requests_total{decision="approved"} 1`,
		`toolgate_budget_limit_usd{budget="acme",window="daily"} 10`,
		// Exported whenever the store counts the calls waiting, none
		// included: an alert on them needs no ambiguous call to have been.
		`toolgate_ambiguous_calls_waiting 0`,
		`toolgate_ambiguous_oldest_age_seconds 0`,
		// Every event goes through the store's outbox, to the log alone
		// with no webhook: the request and its decision, delivered.
		`toolgate_events_delivered_total{type="approval_request.created"} 1`,
		`toolgate_events_delivered_total{type="approval_request.decided"} 1`,
		`toolgate_events_failed_total{type="budget.threshold"} 0`,
		`toolgate_budget_refusals_total{budget="tiny",window="daily"} 1`,
		`toolgate_events_delivered_total{type="budget.limit_reached"} 1`,
	}
	missing := wants
	for deadline := time.Now().Add(20 * time.Second); len(missing) > 0 && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		resp, err := http.Get(metricsURL)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		exposition = string(body)
		missing = nil
		for _, want := range wants {
			if !strings.Contains(exposition, want+"\n") {
				missing = append(missing, want)
			}
		}
	}
	// The events above did reach the metrics: the test checks the names
	// against a scrape that has them.
	require.Empty(t, missing, "%s", exposition)
	require.Equal(t, 0, srv.stop(exitTimeout))
	return exposition
}
