package recorded_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/tools/recorded"
)

type nagerHoliday struct {
	Date             string   `json:"date"`
	Name             string   `json:"name"`
	CountryCode      string   `json:"countryCode"`
	NationalHoliday  bool     `json:"nationalHoliday"`
	SubdivisionCodes []string `json:"subdivisionCodes"`
	HolidayTypes     []string `json:"holidayTypes"`
}

func holidays(t *testing.T, country, year string) answer {
	t.Helper()
	return get(t, recorded.NagerOrigin+"/api/v4/Holidays/"+country+"/"+year)
}

// TestNagerGivesThePublishedAnswer: Portugal's 2027, byte for byte.
func TestNagerGivesThePublishedAnswer(t *testing.T) {
	t.Parallel()
	a := holidays(t, "PT", "2027")
	assert.Equal(t, 200, a.status)
	assert.Equal(t, recorded.Response(recorded.NagerPT2027).Header.Get("Content-Type"), a.header.Get("Content-Type"))
	assert.True(t, sameBody(recorded.NagerPT2027, a.body), "got %s", a.body)
}

// TestNagerCountriesAndYears: every recorded country answers every year
// from 2016 to 2035 with its own holidays, in date order.
func TestNagerCountriesAndYears(t *testing.T) {
	t.Parallel()
	for _, country := range []string{"AT", "BR", "DE", "FR", "GB", "IE", "IT", "NL", "NO", "PL", "PT", "US"} {
		for _, year := range []string{"2016", "2026", "2035"} {
			a := holidays(t, country, year)
			require.Equal(t, 200, a.status, "%s %s", country, year)
			var out []nagerHoliday
			a.decode(t, &out)
			require.GreaterOrEqual(t, len(out), 8, "%s %s", country, year)
			var dates []string
			for _, h := range out {
				dates = append(dates, h.Date)
				assert.Equal(t, country, h.CountryCode)
				assert.True(t, strings.HasPrefix(h.Date, year+"-"), "%s in %s", h.Date, year)
				assert.Equal(t, len(h.SubdivisionCodes) == 0, h.NationalHoliday, "%s %s", country, h.Name)
				assert.NotEmpty(t, h.HolidayTypes)
			}
			assert.True(t, slices.IsSorted(dates), "%s %s", country, year)
		}
	}
}

// TestNagerHolidayRules checks derived dates against the calendar: Easter
// and the days that follow it, nth weekdays, one-off holidays, and rules
// that start in a given year.
func TestNagerHolidayRules(t *testing.T) {
	t.Parallel()
	cases := []struct {
		country, year, date, name string
		present                   bool
	}{
		{"DE", "2025", "2025-04-20", "Easter Sunday", true},
		{"DE", "2025", "2025-04-18", "Good Friday", true},
		{"DE", "2025", "2025-06-09", "Whit Monday", true},
		{"DE", "2025", "2025-11-19", "Repentance and Prayer Day", true},
		{"DE", "2024", "2024-11-20", "Repentance and Prayer Day", true},
		{"DE", "2017", "2017-10-31", "Reformation Day", true},
		{"DE", "2025", "2025-05-08", "Liberation Day", true},
		{"DE", "2026", "2026-05-08", "Liberation Day", false},
		{"US", "2025", "2025-11-27", "Thanksgiving Day", true},
		{"US", "2025", "2025-01-20", "Martin Luther King, Jr. Day", true},
		{"US", "2025", "2025-05-26", "Memorial Day", true},
		{"US", "2020", "2020-06-19", "Juneteenth National Independence Day", false},
		{"US", "2021", "2021-06-19", "Juneteenth National Independence Day", true},
		{"GB", "2020", "2020-05-08", "Early May Bank Holiday", true},
		{"GB", "2022", "2022-06-03", "Queen’s Platinum Jubilee", true},
		{"GB", "2023", "2023-05-08", "Coronation Bank Holiday", true},
		{"IE", "2025", "2025-02-03", "Saint Brigid's Day", true},
		{"IE", "2030", "2030-02-01", "Saint Brigid's Day", true},
		{"IE", "2022", "2022-02-07", "Saint Brigid's Day", false},
		{"PL", "2025", "2025-12-24", "Christmas Eve", true},
		{"PL", "2024", "2024-12-24", "Christmas Eve", false},
		{"IT", "2026", "2026-10-04", "St. Francis of Assisi's Day", true},
		{"BR", "2026", "2026-02-16", "Carnival", true},
		{"BR", "2026", "2026-02-17", "Carnival", true},
		{"PT", "2024", "2024-05-20", "Azores Day", true},
		{"NO", "2027", "2027-05-17", "Whit Monday", true},
		{"NL", "2025", "2025-04-27", "King's Day", true},
	}
	for _, tc := range cases {
		var out []nagerHoliday
		holidays(t, tc.country, tc.year).decode(t, &out)
		found := slices.ContainsFunc(out, func(h nagerHoliday) bool { return h.Date == tc.date && h.Name == tc.name })
		assert.Equal(t, tc.present, found, "%s %s on %s", tc.country, tc.name, tc.date)
	}

	// Norway's Constitution Day and Whit Monday fall together in 2027;
	// the provider lists them in its own order.
	var no []nagerHoliday
	holidays(t, "NO", "2027").decode(t, &no)
	i := slices.IndexFunc(no, func(h nagerHoliday) bool { return h.Date == "2027-05-17" })
	require.GreaterOrEqual(t, i, 0)
	assert.Equal(t, []string{"Constitution Day", "Whit Monday"}, []string{no[i].Name, no[i+1].Name})
}

// TestNagerStatuses: the service's answers besides a list of holidays.
func TestNagerStatuses(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, country, year string
		status              int
		title, yearError    string
	}{
		{"a country code in lower case", "pt", "2027", 200, "", ""},
		{"a country not recorded", "IN", "2027", 204, "", ""},
		{"a year before the recorded ones", "PT", "2015", 204, "", ""},
		{"a year after them", "PT", "2036", 204, "", ""},
		{"a code that is no country", "ZZ", "2027", 404, "Not Found", ""},
		{"a year that is no number", "PT", "soon", 400, "One or more validation errors occurred.", "The value 'soon' is not valid."},
		{"a year too large for the service", "PT", "99999999999", 400, "One or more validation errors occurred.", "The value '99999999999' is not valid."},
		{"a bad year before a bad country", "ZZ", "soon", 400, "One or more validation errors occurred.", "The value 'soon' is not valid."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := holidays(t, tc.country, tc.year)
			assert.Equal(t, tc.status, a.status)
			switch tc.status {
			case 204:
				assert.Empty(t, a.body)
			case 400, 404:
				assert.Equal(t, "application/problem+json; charset=utf-8", a.header.Get("Content-Type"))
				var p struct {
					Type    string              `json:"type"`
					Title   string              `json:"title"`
					Status  int                 `json:"status"`
					Errors  map[string][]string `json:"errors"`
					TraceID string              `json:"traceId"`
				}
				require.NoError(t, json.Unmarshal(a.body, &p))
				assert.Equal(t, tc.title, p.Title)
				assert.Equal(t, tc.status, p.Status)
				assert.Regexp(t, `^00-[0-9a-f]{32}-[0-9a-f]{16}-00$`, p.TraceID)
				if tc.yearError != "" {
					assert.Equal(t, []string{tc.yearError}, p.Errors["year"])
				}
			}
		})
	}
}
