package recorded_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/tools/recorded"
)

func rates(t *testing.T, query string) answer {
	t.Helper()
	return get(t, recorded.FrankfurterOrigin+"/v2/rates?"+query)
}

// TestFrankfurterGivesThePublishedAnswers: the requests behind the
// recorded answers get them, byte for byte.
func TestFrankfurterGivesThePublishedAnswers(t *testing.T) {
	t.Parallel()
	cases := []struct{ query, recording string }{
		{"base=USD&quotes=EUR,GBP", recorded.FrankfurterRates},
		{"base=USD&quotes=EUR,FOO", recorded.FrankfurterInvalidCurrency},
		{"base=USD&quotes=EUR&date=1999-01-04", recorded.FrankfurterEmpty},
	}
	for _, tc := range cases {
		t.Run(tc.recording, func(t *testing.T) {
			t.Parallel()
			a := rates(t, tc.query)
			want := recorded.Response(tc.recording)
			assert.Equal(t, want.StatusCode, a.status)
			assert.Equal(t, want.Header.Get("Content-Type"), a.header.Get("Content-Type"))
			assert.True(t, sameBody(tc.recording, a.body), "got %s", a.body)
		})
	}
}

// TestFrankfurterRates compares answers with Frankfurter's documented
// behaviour over the recorded ECB rates (per euro, e.g. on 2026-03-25 USD
// 1.08096, JPY 162.10, IDR 17890.93): a cross rate is the quote's euro rate
// over the base's, rounded to 2 decimals above 80, 3 above 20, 4 above 1,
// 5 above 0.0001 and to a whole number above 5000; a date without a
// publication (weekend, TARGET holiday) gives the last one before it, each
// element dated by its own observation; before the data, and after it,
// the answer is []; the identity rate appears when the base is quoted.
func TestFrankfurterRates(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, query, want string
	}{
		{"three quotes, three rates", "base=USD&quotes=EUR,GBP,JPY",
			`[{"date":"2026-03-25","base":"USD","quote":"EUR","rate":0.9251},{"date":"2026-03-25","base":"USD","quote":"GBP","rate":0.7734},{"date":"2026-03-25","base":"USD","quote":"JPY","rate":149.96}]`},
		{"the euro is the default base", "quotes=USD,JPY,IDR",
			`[{"date":"2026-03-25","base":"EUR","quote":"IDR","rate":17891},{"date":"2026-03-25","base":"EUR","quote":"JPY","rate":162.1},{"date":"2026-03-25","base":"EUR","quote":"USD","rate":1.081}]`},
		{"codes in any case", "base=usd&quotes=jpy",
			`[{"date":"2026-03-25","base":"USD","quote":"JPY","rate":149.96}]`},
		{"small rates get more decimals", "base=IDR&quotes=JPY,EUR",
			`[{"date":"2026-03-25","base":"IDR","quote":"EUR","rate":5.6e-05},{"date":"2026-03-25","base":"IDR","quote":"JPY","rate":0.00906}]`},
		{"a Saturday gives Friday's rates", "base=GBP&quotes=CHF&date=2026-03-21",
			`[{"date":"2026-03-20","base":"GBP","quote":"CHF","rate":1.1343}]`},
		{"Christmas gives Christmas Eve's", "quotes=USD&date=2025-12-25",
			`[{"date":"2025-12-24","base":"EUR","quote":"USD","rate":1.0663}]`},
		{"New Year's Day gives New Year's Eve's", "quotes=USD&date=2026-01-01",
			`[{"date":"2025-12-31","base":"EUR","quote":"USD","rate":1.0629}]`},
		{"a discontinued currency keeps its last rate, dated", "quotes=BGN,USD&date=2026-01-02",
			`[{"date":"2025-12-31","base":"EUR","quote":"BGN","rate":1.9558},{"date":"2026-01-02","base":"EUR","quote":"USD","rate":1.0664}]`},
		{"until it is too old to carry", "quotes=BGN,USD&date=2026-01-20",
			`[{"date":"2026-01-20","base":"EUR","quote":"USD","rate":1.0804}]`},
		{"the identity rate when the base is quoted", "base=USD&quotes=USD,EUR",
			`[{"date":"2026-03-25","base":"USD","quote":"EUR","rate":0.9251},{"date":"2026-03-25","base":"USD","quote":"USD","rate":1.0}]`},
		{"a real currency without rates is left out", "quotes=USD,KPW",
			`[{"date":"2026-03-25","base":"EUR","quote":"USD","rate":1.081}]`},
		{"a base without rates gives none", "base=KPW&quotes=USD", `[]`},
		{"before the data", "quotes=USD&date=2025-11-28", `[]`},
		{"after the data", "quotes=USD&date=2026-04-01", `[]`},
		{"a range, by date", "quotes=USD&from=2026-03-19&to=2026-03-24",
			`[{"date":"2026-03-19","base":"EUR","quote":"USD","rate":1.0744},{"date":"2026-03-20","base":"EUR","quote":"USD","rate":1.0827},{"date":"2026-03-23","base":"EUR","quote":"USD","rate":1.0829},{"date":"2026-03-24","base":"EUR","quote":"USD","rate":1.0909}]`},
		{"a range from a Sunday starts with Friday's", "quotes=USD&from=2026-03-22&to=2026-03-23",
			`[{"date":"2026-03-20","base":"EUR","quote":"USD","rate":1.0827},{"date":"2026-03-23","base":"EUR","quote":"USD","rate":1.0829}]`},
		{"the ECB alone, as published", "providers=ECB&quotes=USD,IDR",
			`[{"date":"2026-03-25","base":"EUR","quote":"IDR","rate":17890.93},{"date":"2026-03-25","base":"EUR","quote":"USD","rate":1.08096}]`},
		{"a provider not recorded", "providers=BOC&quotes=USD", `[]`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := rates(t, tc.query)
			assert.Equal(t, 200, a.status)
			assert.Equal(t, tc.want, string(a.body))
		})
	}
}

// TestFrankfurterEveryCurrency: without quotes, every currency of the day
// and the base's identity rate, sorted by quote.
func TestFrankfurterEveryCurrency(t *testing.T) {
	t.Parallel()
	var out []struct {
		Date, Base, Quote string
		Rate              float64
	}
	rates(t, "base=USD").decode(t, &out)
	require.Len(t, out, 30, "the ECB's 29 currencies of 2026 and the euro")
	var quotes []string
	for _, r := range out {
		quotes = append(quotes, r.Quote)
		assert.Equal(t, "USD", r.Base)
		assert.Equal(t, "2026-03-25", r.Date)
		assert.Positive(t, r.Rate)
	}
	assert.True(t, slices.IsSorted(quotes))
	assert.Contains(t, quotes, "USD")
	assert.Contains(t, quotes, "EUR")
}

// TestFrankfurterErrors: the service's 422 bodies, checked in its order.
func TestFrankfurterErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		query   string
		status  int
		message string
	}{
		{"base=USD&quotes=EUR,FOO", 422, "invalid currency: FOO"},
		{"base=XYZ&quotes=FOO,GBP,BAR", 422, "invalid currency: XYZ,FOO,BAR"},
		{"base=USD&symbols=EUR", 422, "unknown parameter: symbols"},
		{"from=2026-01-01&amount=10&x=1", 422, "unknown parameter: amount, x"},
		{"date=soon&quotes=FOO", 422, "invalid date"},
		{"date=2026-02-30", 422, "invalid date"},
		{"date=2026-03-02&from=2026-03-01", 422, "conflicting params"},
		{"from=2026-01-01&group=day", 422, "invalid group"},
		{"expand=sources", 422, "invalid expand: sources"},
		{"from=2026-01-01&group=week", 501, "group is not simulated by the recorded rates"},
	}
	for _, tc := range cases {
		t.Run(tc.query, func(t *testing.T) {
			t.Parallel()
			a := rates(t, tc.query)
			assert.Equal(t, tc.status, a.status)
			var body struct {
				Status  int    `json:"status"`
				Message string `json:"message"`
			}
			a.decode(t, &body)
			assert.Equal(t, tc.status, body.Status)
			assert.Equal(t, tc.message, body.Message)
		})
	}
}
