package loadtest

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/shopspring/decimal"
)

// checkKeys: no two keys name the same execution.
func (l *load) checkKeys(calls []*call) {
	owner := make(map[string]string, len(calls))
	for _, c := range calls {
		if c.execID == "" {
			continue
		}
		if other, ok := owner[c.execID]; ok {
			l.stats.problem("execution %s answered two keys: %s and %s", c.execID, other, c.key)
		}
		owner[c.execID] = c.key
	}
}

// checkExecutions fetches every execution a 200 named: it must be there,
// for its caller, byte-identical to the call's answer.
func (l *load) checkExecutions(calls []*call) {
	var answered []*call
	for _, c := range calls {
		if c.execID != "" {
			answered = append(answered, c)
		}
	}
	l.parallel(answered, func(_ int, c *call, _ *rand.Rand) {
		var rep reply
		for attempt := range 3 { // a transport error proves nothing: try again
			if rep = l.send("get", l.r.patient, c.p, http.MethodGet, "/v1/executions/"+c.execID, nil, ""); rep.err == nil {
				break
			}
			time.Sleep(retryWaitMin << attempt)
		}
		switch {
		case rep.err != nil:
			l.stats.problem("GET execution %s: %v", c.execID, rep.err)
		case rep.status != http.StatusOK:
			l.stats.problem("GET execution %s of key %s: %d %s", c.execID, c.key, rep.status, rep.body)
		case rep.header.Get("Toolgate-Execution-Id") != c.execID:
			l.stats.problem("GET execution %s: Toolgate-Execution-Id %q", c.execID, rep.header.Get("Toolgate-Execution-Id"))
		case sha256.Sum256(rep.body) != c.sum:
			l.stats.problem("GET execution %s of key %s: not the bytes the call answered (%d bytes, the call %d)", c.execID, c.key, len(rep.body), c.size)
		}
	})
}

// spend is what the server and the callers say a principal spent today.
type spend struct {
	used, goalUsed       decimal.Decimal // from a final quote's controls
	completed, goalTotal decimal.Decimal // sum of completed executions' totalUsd
}

// checkSpend quotes goal-data once more as every principal and compares the
// spend the quote reports with the completed executions the callers saw.
// No call may be in flight. The spend is per UTC day, so the comparison is
// skipped when the day changed since the run began.
func (l *load) checkSpend(calls []*call, began time.Time) {
	t := l.r.t
	out := make(map[string]spend, len(l.r.principals))
	for _, c := range calls {
		if c.status != "completed" {
			continue
		}
		s := out[c.p.id]
		s.completed = s.completed.Add(c.totalUSD)
		if c.slug == "goal-data" {
			s.goalTotal = s.goalTotal.Add(c.totalUSD)
		}
		out[c.p.id] = s
	}
	for i := range l.r.principals {
		p := &l.r.principals[i]
		rep := l.send("final-quote", l.r.patient, p, http.MethodPost, "/v1/tools/goal-data/quote", nil, "")
		if rep.err != nil || rep.status != http.StatusCreated {
			l.stats.problem("final quote as %s: %v %d %s", p.id, rep.err, rep.status, rep.body)
			continue
		}
		var q struct {
			Controls struct {
				Global struct {
					DailyUsedUSD string `json:"dailyUsedUsd"`
				} `json:"global"`
				Tool *struct {
					DailyUsedUSD string `json:"dailyUsedUsd"`
				} `json:"tool"`
			} `json:"controls"`
		}
		if err := json.Unmarshal(rep.body, &q); err != nil {
			l.stats.problem("final quote as %s: %v: %s", p.id, err, rep.body)
			continue
		}
		s := out[p.id]
		var err error
		if s.used, err = decimal.NewFromString(q.Controls.Global.DailyUsedUSD); err != nil {
			l.stats.problem("final quote as %s: dailyUsedUsd %q", p.id, q.Controls.Global.DailyUsedUSD)
			continue
		}
		if q.Controls.Tool != nil {
			if s.goalUsed, err = decimal.NewFromString(q.Controls.Tool.DailyUsedUSD); err != nil {
				l.stats.problem("final quote as %s: tool dailyUsedUsd %q", p.id, q.Controls.Tool.DailyUsedUSD)
				continue
			}
		}
		out[p.id] = s
		if day(time.Now()) != day(began) {
			t.Logf("the UTC day changed during the run: spend of %s not compared", p.id)
			continue
		}
		if !s.used.Equal(s.completed) {
			l.stats.problem("%s: the server reports %s spent today, the completed executions total %s", p.id, s.used.StringFixed(4), s.completed.StringFixed(4))
		}
		if p.dailyLimit != nil && s.used.GreaterThan(*p.dailyLimit) {
			l.stats.problem("%s overspent: %s against a daily limit of %s", p.id, s.used.StringFixed(4), p.dailyLimit.StringFixed(4))
		}
		if p.goalLimit != nil {
			if q.Controls.Tool == nil {
				l.stats.problem("%s: the final quote shows no goal-data controls", p.id)
			} else if !s.goalUsed.Equal(s.goalTotal) || s.goalUsed.GreaterThan(*p.goalLimit) {
				l.stats.problem("%s: goal-data spend %s, completed goal-data calls %s, limit %s", p.id, s.goalUsed.StringFixed(4), s.goalTotal.StringFixed(4), p.goalLimit.StringFixed(4))
			}
		}
	}
}

func day(t time.Time) string { return t.UTC().Format(time.DateOnly) }

// checkExercised makes sure the run did what it is for: money moved, the
// upstreams' faults failed executions, and the tight principals were
// refused. Skipped for a run too small to promise any of it.
func (l *load) checkExercised(calls []*call) {
	t := l.r.t
	var completed, failed, refused, tightGoal int
	var money decimal.Decimal
	for _, c := range calls {
		switch {
		case c.status == "completed":
			completed++
			money = money.Add(c.totalUSD)
		case c.status == "failed":
			failed++
		case c.refusal == "spend_limit_exceeded":
			refused++
		}
		if c.p.tight() && c.slug == "goal-data" && c.resolved {
			tightGoal++
		}
	}
	if len(calls) < 100 {
		t.Logf("only %d calls: not checking that every path was exercised", len(calls))
		return
	}
	if completed == 0 || failed == 0 || !money.IsPositive() {
		t.Errorf("%d calls: %d completed, %d failed, %s spent: the load did not exercise success, failure and payment", len(calls), completed, failed, money.StringFixed(4))
	}
	if tightGoal >= 10 && refused == 0 {
		t.Errorf("the tight principals made %d goal-data calls and none was refused for spend", tightGoal)
	}
}

// checkRSS applies the memory rule of the package doc to the samples of a
// window, and reports the largest sample of each third. retainedKiB is what
// the store had to keep during the last third.
func checkRSS(l *load, samples []rssSample, window time.Duration, retainedKiB int64, enforce bool) [3]int64 {
	t := l.r.t
	var maxes [3]int64
	var counts [3]int
	for _, s := range samples {
		i := int(3 * s.at / window)
		if i < 0 || i > 2 {
			continue
		}
		maxes[i] = max(maxes[i], s.kib)
		counts[i]++
	}
	budget := maxes[1]*5/4 + 10*1024 + 2*retainedKiB
	verdict := "recorded only"
	if enforce {
		verdict = "enforced"
	}
	t.Logf("RSS max per third (KiB): warm-up %d, middle %d, last %d (samples %v); budget for the last %d (middle +25%% +10 MiB +2x %d KiB retained), %s",
		maxes[0], maxes[1], maxes[2], counts, budget, retainedKiB, verdict)
	if !enforce {
		return maxes
	}
	if counts[1] == 0 || counts[2] == 0 {
		t.Errorf("too few RSS samples to judge memory: %v", counts)
		return maxes
	}
	if maxes[2] > budget {
		t.Errorf("the server's memory grew after warm-up: %d KiB in the last third against %d KiB in the middle one (budget %d KiB)", maxes[2], maxes[1], budget)
	}
	return maxes
}

// retainedKiB estimates what the memory store keeps of the calls answered in
// the last third of the window: each response, and about 2 KiB of quote,
// idempotency record, execution and ledger row; a quote alone for a
// refused call.
func retainedKiB(calls []*call, start time.Time, window time.Duration) int64 {
	from := start.Add(window * 2 / 3)
	to := start.Add(window)
	var bytes int64
	for _, c := range calls {
		switch {
		case c.execID != "" && !c.answeredAt.Before(from) && c.answeredAt.Before(to):
			bytes += int64(c.size) + 2048
		case c.execID == "" && !c.first.Before(from) && c.first.Before(to):
			bytes += 1024
		}
	}
	return bytes / 1024
}

// report logs a phase's figures and fails the test on every problem. A
// window of 0 reports no request rate.
func (l *load) report(name string, calls []*call, window time.Duration) {
	t := l.r.t
	s := l.stats
	var completed, failed, spendRefused, rateRefused, unresolved int
	for _, c := range calls {
		switch {
		case c.status == "completed":
			completed++
		case c.status == "failed":
			failed++
		case c.refusal == "spend_limit_exceeded":
			spendRefused++
		case c.refusal == "rate_limited":
			rateRefused++
		case !c.resolved:
			unresolved++
		}
	}
	all := s.total("", func(int) bool { return true })
	transport := s.total("", func(st int) bool { return st == 0 })
	fives := s.total("", func(st int) bool { return st >= 500 })
	s.mu.Lock()
	classes := sortedMap(s.transport)
	s.mu.Unlock()
	rate := ""
	if window > 0 {
		rate = fmt.Sprintf(" in a %s window (%.0f/s)", window, float64(all)/window.Seconds())
	}
	t.Logf("%s: %d callers: %d requests%s: %s; %d transport errors %s, %d answered 5xx",
		name, l.r.set.callers, all, rate, l.kinds(), transport, classes, fives)
	t.Logf("%s: %d calls: %d completed, %d failed %v, %d refused spend_limit_exceeded, %d rate_limited, %d without answer; %d retries met 409 idempotency_key_in_use, %d 200s were replays",
		name, len(calls), completed, failed, sortedMap(s.execCodes), spendRefused, rateRefused, unresolved, s.codes["idempotency_key_in_use"], s.replayed)
	for _, kind := range []string{"quote", "call"} {
		if p50 := s.percentile(kind, 50); p50 > 0 {
			t.Logf("%s: %s latency p50 %s p99 %s", name, kind, p50.Round(time.Microsecond), s.percentile(kind, 99).Round(time.Microsecond))
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.problems {
		t.Error(p)
	}
	if s.nProblems > len(s.problems) {
		t.Errorf("... and %d more problems", s.nProblems-len(s.problems))
	}
}

// kinds lists the requests per kind and status.
func (l *load) kinds() string {
	l.stats.mu.Lock()
	defer l.stats.mu.Unlock()
	var parts []string
	for kind, byStatus := range l.stats.requests {
		m := map[string]int{}
		for st, n := range byStatus {
			label := fmt.Sprint(st)
			if st == 0 {
				label = "transport"
			}
			m[label] = n
		}
		parts = append(parts, kind+" "+sortedMap(m))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

func sortedMap(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s:%d", k, m[k])
	}
	return "{" + strings.Join(parts, " ") + "}"
}

// checkLogs: the server logged no 5xx and no error, and stopped cleanly.
func checkLogs(l *load, srv *server) {
	t := l.r.t
	logs := srv.readLogs()
	statuses := map[string]int{}
	for st, n := range logs.requests {
		statuses[fmt.Sprint(st)] = n
	}
	t.Logf("%s log: %d lines, requests by status %s, %d errors", srv.name, logs.lines, sortedMap(statuses), logs.nErrors)
	if n := logs.server5xx(); n > 0 {
		t.Errorf("%s logged %d requests answered 5xx (some perhaps to callers that had gone); errors: %s", srv.name, n, strings.Join(logs.errors, "\n"))
	} else if logs.nErrors > 0 {
		t.Errorf("%s logged %d errors: %s", srv.name, logs.nErrors, strings.Join(logs.errors, "\n"))
	}
	if logs.notJSON > 0 {
		t.Errorf("%s wrote %d log lines that are not JSON", srv.name, logs.notJSON)
	}
	if !logs.stopped {
		t.Errorf("%s did not log its clean stop", srv.name)
	}
}
