package recorded

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The simulated Frankfurter v2 service answers /v2/rates from the recorded
// ECB reference rates, as of the day of the last recorded publication.

// frankfurterLookback is how far back a date reaches for each currency's
// last published rate, as the service carries rates forward over weekends
// and holidays.
const frankfurterLookback = 14 * 24 * time.Hour

var ecbData = &dataset[*ecbRates]{file: "ecb_rates.json.gz", decode: decodeECBRates}

// ecbRates are the recorded reference rates: for each currency, its
// publications in date order, in units per euro.
type ecbRates struct {
	series map[string][]observation
	codes  []string    // the currencies, sorted
	days   []time.Time // the publication days, in order
	last   time.Time   // the last publication day: the service's "today"
}

type observation struct {
	date time.Time
	rate float64
}

func decodeECBRates(raw []byte) (*ecbRates, error) {
	var rows []struct {
		Date  string  `json:"date"`
		Base  string  `json:"base"`
		Quote string  `json:"quote"`
		Rate  float64 `json:"rate"`
	}
	if err := json.Unmarshal(raw, &rows); err != nil {
		return nil, err
	}
	out := &ecbRates{series: map[string][]observation{}}
	for _, r := range rows {
		d, err := time.Parse(time.DateOnly, r.Date)
		if err != nil || r.Base != "EUR" || r.Rate <= 0 {
			return nil, fmt.Errorf("a bad row %+v", r)
		}
		if _, ok := out.series[r.Quote]; !ok {
			out.codes = append(out.codes, r.Quote)
		}
		out.series[r.Quote] = append(out.series[r.Quote], observation{d, r.Rate})
		if d.After(out.last) {
			out.last = d
			out.days = append(out.days, d)
		}
	}
	slices.Sort(out.codes)
	return out, nil
}

// snapshot is each currency's last rate published on or before day,
// within the lookback, and the euro itself at 1, dated as the latest of
// them.
func (e *ecbRates) snapshot(day time.Time) map[string]observation {
	out := map[string]observation{}
	var latest time.Time
	for code, obs := range e.series {
		i, found := slices.BinarySearchFunc(obs, day, func(o observation, d time.Time) int { return o.date.Compare(d) })
		if !found {
			i--
		}
		if i >= 0 && !obs[i].date.Before(day.Add(-frankfurterLookback)) {
			out[code] = obs[i]
			if obs[i].date.After(latest) {
				latest = obs[i].date
			}
		}
	}
	if len(out) > 0 {
		out["EUR"] = observation{latest, 1}
	}
	return out
}

// frankfurterAllowed are the parameters /v2/rates accepts.
var frankfurterAllowed = []string{"base", "quotes", "providers", "date", "from", "to", "group", "expand"}

// frankfurterQuery is a validated query.
type frankfurterQuery struct {
	base      string
	quotes    []string // nil: every currency
	providers []string // nil: every provider
	date      *time.Time
	from, to  *time.Time
}

// serveFrankfurter answers GET /v2/rates as the service does.
func serveFrankfurter(w http.ResponseWriter, r *http.Request) {
	data := ecbData.get()
	q, status, message := parseFrankfurterQuery(orderedQuery(r.URL.RawQuery))
	if status != 0 {
		writeFrankfurterError(w, status, message)
		return
	}
	var rows []frankfurterRow
	switch {
	case q.date != nil && q.date.After(data.last):
		// After the recorded rates end: the service's answer for a day it
		// has no rates for.
	case q.date != nil:
		rows = q.rows(data, *q.date)
	case q.from != nil:
		to := data.last
		if q.to != nil && q.to.Before(to) {
			to = *q.to
		}
		rows = q.rangeRows(data, *q.from, to)
	default:
		// The latest rates: those in force tomorrow, as the service counts,
		// tomorrow being the day after the last recorded publication.
		rows = q.rows(data, data.last.AddDate(0, 0, 1))
	}
	var b bytes.Buffer
	b.WriteByte('[')
	for i, row := range rows {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"date":%q,"base":%q,"quote":%q,"rate":%s}`, row.date, row.base, row.quote, row.rate)
	}
	b.WriteByte(']')
	writeBody(w, http.StatusOK, contentJSON, b.Bytes())
}

// parseFrankfurterQuery validates a query in the service's order and
// answers 0 or the status and message of its error.
func parseFrankfurterQuery(params []param) (frankfurterQuery, int, string) {
	q := frankfurterQuery{base: "EUR"}
	var unknown []string
	for _, p := range params {
		if !slices.Contains(frankfurterAllowed, p.name) {
			unknown = append(unknown, p.name)
		}
	}
	if len(unknown) > 0 {
		return q, http.StatusUnprocessableEntity, "unknown parameter: " + strings.Join(unknown, ", ")
	}
	for _, name := range []string{"date", "from", "to"} {
		v, ok := queryValue(params, name)
		if !ok {
			continue
		}
		d, err := parseFrankfurterDate(v)
		if err != nil {
			return q, http.StatusUnprocessableEntity, "invalid date"
		}
		switch name {
		case "date":
			q.date = &d
		case "from":
			q.from = &d
		case "to":
			q.to = &d
		}
	}
	if q.date != nil && (q.from != nil || q.to != nil) {
		return q, http.StatusUnprocessableEntity, "conflicting params"
	}
	if v, ok := queryValue(params, "group"); ok && v != "week" && v != "month" {
		return q, http.StatusUnprocessableEntity, "invalid group"
	}
	if v, ok := queryValue(params, "expand"); ok {
		var bad []string
		for _, e := range rubySplit(strings.ToLower(v)) {
			if e != "providers" {
				bad = append(bad, e)
			}
		}
		if len(bad) > 0 {
			return q, http.StatusUnprocessableEntity, "invalid expand: " + strings.Join(bad, ",")
		}
	}
	var invalid []string
	if v, ok := queryValue(params, "base"); ok {
		q.base = strings.ToUpper(v)
		if !iso4217[q.base] {
			invalid = append(invalid, q.base)
		}
	}
	if v, ok := queryValue(params, "quotes"); ok {
		q.quotes = rubySplit(strings.ToUpper(v))
		for _, c := range q.quotes {
			if !iso4217[c] {
				invalid = append(invalid, c)
			}
		}
		if q.quotes == nil {
			q.quotes = []string{}
		}
	}
	if len(invalid) > 0 {
		return q, http.StatusUnprocessableEntity, "invalid currency: " + strings.Join(invalid, ",")
	}
	for _, name := range []string{"group", "expand"} {
		if _, ok := queryValue(params, name); ok {
			return q, http.StatusNotImplemented, name + " is not simulated by the recorded rates"
		}
	}
	if v, ok := queryValue(params, "providers"); ok {
		q.providers = rubySplit(strings.ToUpper(v))
	}
	return q, 0, ""
}

// parseFrankfurterDate reads the date forms the service is asked with:
// 2026-03-25, 2026-3-5 and 20260325.
func parseFrankfurterDate(v string) (time.Time, error) {
	d, err := time.Parse("2006-1-2", v)
	if err != nil {
		d, err = time.Parse("20060102", v)
	}
	return d, err
}

// rubySplit splits on commas as Ruby's String#split does: trailing empty
// fields are dropped.
func rubySplit(s string) []string {
	parts := strings.Split(s, ",")
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	if len(parts) == 0 {
		return nil
	}
	return parts
}

// frankfurterRow is one element of an answer, its rate already written as
// the service writes it.
type frankfurterRow struct {
	date, base, quote, rate string
}

// rows answers one day: each currency's rate carried forward to the day,
// rebased on the query's base, filtered by its quotes, sorted by quote.
func (q frankfurterQuery) rows(data *ecbRates, day time.Time) []frankfurterRow {
	rows := q.rebase(data, day)
	slices.SortFunc(rows, func(a, b frankfurterRow) int { return strings.Compare(a.quote, b.quote) })
	return rows
}

// rangeRows answers every publication day from from to to, starting with
// the rates in force on from: sorted by date, then quote, each currency's
// observation listed once.
func (q frankfurterQuery) rangeRows(data *ecbRates, from, to time.Time) []frankfurterRow {
	anchors := []time.Time{from}
	for _, d := range data.days {
		if d.After(from) && !d.After(to) {
			anchors = append(anchors, d)
		}
	}
	seen := map[[2]string]bool{}
	var out []frankfurterRow
	for _, day := range anchors {
		if day.After(to) {
			break
		}
		for _, row := range q.rebase(data, day) {
			key := [2]string{row.quote, row.date}
			if !seen[key] {
				seen[key] = true
				out = append(out, row)
			}
		}
	}
	slices.SortFunc(out, func(a, b frankfurterRow) int {
		return cmp.Or(strings.Compare(a.date, b.date), strings.Compare(a.quote, b.quote))
	})
	return out
}

// rebase turns the euro rates in force on day into rates of the query's
// base, as the service derives cross rates: the quote's euro rate over the
// base's, rounded to the precision the pair is quoted in. Each row keeps
// the date its quote was observed; the base's own rate comes last as the
// rate of the euro in the base, then the identity rate when asked for.
func (q frankfurterQuery) rebase(data *ecbRates, day time.Time) []frankfurterRow {
	if q.providers != nil && !slices.Contains(q.providers, "ECB") {
		return nil // the ECB is the only provider recorded
	}
	snap := data.snapshot(day)
	base, ok := snap[q.base]
	if !ok {
		return nil // no rate of the base: no way to derive the others
	}
	// A query for the ECB alone gets its euro rates as published.
	verbatim := q.base == "EUR" && len(q.providers) == 1
	var rows []frankfurterRow
	latest := ""
	for _, code := range append(slices.Clone(data.codes), "EUR") {
		obs, ok := snap[code]
		if !ok || code == q.base || (q.quotes != nil && !slices.Contains(q.quotes, code)) {
			continue
		}
		date := obs.date.Format(time.DateOnly)
		if code == "EUR" {
			date = base.date.Format(time.DateOnly)
		}
		rate := roundedRate(obs.rate / base.rate)
		if verbatim {
			rate = rubyFloat(obs.rate)
		}
		rows = append(rows, frankfurterRow{date: date, base: q.base, quote: code, rate: rate})
		latest = max(latest, date)
	}
	if len(rows) > 0 && (q.quotes == nil || slices.Contains(q.quotes, q.base)) {
		rows = append(rows, frankfurterRow{date: latest, base: q.base, quote: q.base, rate: "1.0"})
	}
	return rows
}

// roundedRate rounds a rate as the service quotes pairs: no decimals above
// 5000, two above 80, three above 20, four above 1, five above 0.0001,
// six below.
func roundedRate(v float64) string {
	var decimals int
	switch {
	case v > 5000:
		return strconv.FormatFloat(math.Round(v), 'f', 0, 64)
	case v > 80:
		decimals = 2
	case v > 20:
		decimals = 3
	case v > 1:
		decimals = 4
	case v > 0.0001:
		decimals = 5
	default:
		decimals = 6
	}
	f, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'f', decimals, 64), 64)
	return rubyFloat(f)
}

// rubyFloat writes a float as the service's JSON encoder does: "1.0" for a
// whole number, an exponent below 0.0001.
func rubyFloat(f float64) string {
	switch {
	case f != 0 && math.Abs(f) < 1e-4:
		s := strconv.FormatFloat(f, 'e', -1, 64) // 5.7e-05
		if mantissa, exp, ok := strings.Cut(s, "e"); ok && !strings.Contains(mantissa, ".") {
			s = mantissa + ".0e" + exp
		}
		return s
	case f == math.Trunc(f) && math.Abs(f) < 1e16:
		return strconv.FormatFloat(f, 'f', 1, 64)
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// writeFrankfurterError writes the service's JSON error body.
func writeFrankfurterError(w http.ResponseWriter, status int, message string) {
	body, _ := json.Marshal(struct {
		Status  int    `json:"status"`
		Message string `json:"message"`
	}{status, message})
	writeBody(w, status, contentJSON, body)
}
