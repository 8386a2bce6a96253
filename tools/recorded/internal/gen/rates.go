package gen

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// The ECB publication days the rates cover. The last one is the date of
// Frankfurter's published sample, which the rates reproduce exactly.
var (
	ratesFirst = time.Date(2025, time.December, 1, 0, 0, 0, 0, time.UTC)
	ratesLast  = time.Date(2026, time.March, 25, 0, 0, 0, 0, time.UTC)
)

// ecbClosed are the TARGET closing days inside the period on which the ECB
// publishes no reference rates; weekends are closed too.
var ecbClosed = map[string]bool{"2025-12-25": true, "2025-12-26": true, "2026-01-01": true}

// bgnLastDay is the last reference rate for the Bulgarian lev: Bulgaria
// adopted the euro on 1 January 2026 and the lev, fixed at 1.95583 to the
// euro, left the ECB's list.
var bgnLastDay = time.Date(2025, time.December, 31, 0, 0, 0, 0, time.UTC)

// rate is one element of a Frankfurter v2 answer, in its field order.
type rate struct {
	Date  string  `json:"date"`
	Base  string  `json:"base"`
	Quote string  `json:"quote"`
	Rate  float64 `json:"rate"`
}

// series describes one currency: its euro rate on the last day, and how it
// moves. A dollar-linked currency moves as the dollar does, times its own
// dollar rate; a European one moves against the euro directly.
type series struct {
	code      string
	last      float64 // units per euro on ratesLast
	vol       float64 // daily standard deviation of the log change
	drift     float64 // daily mean log change (a weakening currency rises)
	perDollar bool
}

// The ECB's currencies, ending near their real levels of the time the
// sample's dollar and pound rates imply (EUR/USD about 1.08). The dollar
// and the pound end exactly on the values that give the sample's cross
// rates, USD to EUR 0.9251 and USD to GBP 0.7734, after Frankfurter's
// rounding; the dollar carries one digit more than the ECB publishes.
var ecbSeries = []series{
	{code: "AUD", last: 1.7186, vol: 0.004, perDollar: true},
	{code: "BRL", last: 6.1622, vol: 0.006, perDollar: true},
	{code: "CAD", last: 1.5480, vol: 0.003, perDollar: true},
	{code: "CHF", last: 0.95350, vol: 0.003},
	{code: "CNY", last: 7.8478, vol: 0.001, perDollar: true},
	{code: "CZK", last: 24.968, vol: 0.0015},
	{code: "DKK", last: 7.4595, vol: 0.0001},
	{code: "GBP", last: 0.83601, vol: 0.003},
	{code: "HKD", last: 8.4044, vol: 0.0002, perDollar: true},
	{code: "HUF", last: 401.25, vol: 0.004},
	{code: "IDR", last: 17890.93, vol: 0.003, perDollar: true},
	{code: "ILS", last: 3.9561, vol: 0.005, perDollar: true},
	{code: "INR", last: 92.640, vol: 0.003, perDollar: true},
	{code: "ISK", last: 145.50, vol: 0.003},
	{code: "JPY", last: 162.10, vol: 0.005, perDollar: true},
	{code: "KRW", last: 1585.82, vol: 0.004, perDollar: true},
	{code: "MXN", last: 21.619, vol: 0.006, perDollar: true},
	{code: "MYR", last: 4.7889, vol: 0.003, perDollar: true},
	{code: "NOK", last: 11.398, vol: 0.005},
	{code: "NZD", last: 1.8899, vol: 0.004, perDollar: true},
	{code: "PHP", last: 61.940, vol: 0.003, perDollar: true},
	{code: "PLN", last: 4.1853, vol: 0.002},
	{code: "RON", last: 4.9771, vol: 0.0008},
	{code: "SEK", last: 10.893, vol: 0.004},
	{code: "SGD", last: 1.4464, vol: 0.002, perDollar: true},
	{code: "THB", last: 36.537, vol: 0.004, perDollar: true},
	{code: "TRY", last: 41.077, vol: 0.002, drift: 0.0007, perDollar: true},
	{code: "USD", last: 1.08096, vol: 0.004},
	{code: "ZAR", last: 19.674, vol: 0.007, perDollar: true},
}

// buildRates walks every currency back from its last value, one
// publication day at a time, and lists the rates as Frankfurter's answer
// for the whole period with base EUR: by date, then by quote.
func buildRates() ([]byte, error) {
	rng := newRNG(20251201)
	var days []time.Time
	for d := ratesFirst; !d.After(ratesLast); d = d.AddDate(0, 0, 1) {
		if d.Weekday() != time.Saturday && d.Weekday() != time.Sunday && !ecbClosed[d.Format(time.DateOnly)] {
			days = append(days, d)
		}
	}
	walk := func(last, vol, drift float64) []float64 {
		v := make([]float64, len(days))
		v[len(v)-1] = last
		for i := len(v) - 1; i > 0; i-- {
			v[i-1] = v[i] * math.Exp(-(drift + vol*rng.NormFloat64()))
		}
		return v
	}
	var usd []float64
	for _, s := range ecbSeries {
		if s.code == "USD" {
			usd = walk(s.last, s.vol, s.drift)
		}
	}
	values := map[string][]float64{"USD": usd}
	for _, s := range ecbSeries {
		switch {
		case s.code == "USD":
		case s.perDollar:
			perDollar := walk(s.last/usd[len(usd)-1], s.vol, s.drift)
			v := make([]float64, len(days))
			for i := range v {
				v[i] = usd[i] * perDollar[i]
			}
			values[s.code] = v
		default:
			values[s.code] = walk(s.last, s.vol, s.drift)
		}
	}

	var out []rate
	for i, d := range days {
		date := d.Format(time.DateOnly)
		last := i == len(days)-1
		for _, s := range ecbSeries {
			if s.code == "AUD" && !d.After(bgnLastDay) {
				// BGN sorts between AUD and BRL.
				out = append(out, rate{date, "EUR", "AUD", ecbRound("AUD", values["AUD"][i], last)})
				out = append(out, rate{date, "EUR", "BGN", 1.9558})
				continue
			}
			out = append(out, rate{date, "EUR", s.code, ecbRound(s.code, values[s.code][i], last)})
		}
	}
	if err := checkSample(out); err != nil {
		return nil, err
	}
	return marshal(out)
}

// ecbRound rounds a rate as the ECB publishes it: five significant digits,
// two decimals for the rupiah and the won. The last day keeps the values
// given, which are the sample's.
func ecbRound(code string, v float64, last bool) float64 {
	if last {
		for _, s := range ecbSeries {
			if s.code == code {
				return s.last
			}
		}
	}
	if code == "IDR" || code == "KRW" {
		return math.Round(v*100) / 100
	}
	f, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 5, 64), 64)
	return f
}

// checkSample confirms that the last day's dollar and pound give the
// published sample after Frankfurter's rounding (five decimals below 1).
func checkSample(rates []rate) error {
	var usd, gbp float64
	for _, r := range rates {
		if r.Date == ratesLast.Format(time.DateOnly) {
			switch r.Quote {
			case "USD":
				usd = r.Rate
			case "GBP":
				gbp = r.Rate
			}
		}
	}
	round5 := func(v float64) string { return strconv.FormatFloat(v, 'f', 5, 64) }
	if got := round5(1 / usd); got != "0.92510" {
		return fmt.Errorf("USD to EUR on the last day rounds to %s, not the sample's 0.9251", got)
	}
	if got := round5(gbp / usd); got != "0.77340" {
		return fmt.Errorf("USD to GBP on the last day rounds to %s, not the sample's 0.7734", got)
	}
	return nil
}
