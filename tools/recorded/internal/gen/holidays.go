package gen

import (
	"cmp"
	"slices"
	"time"
)

// The years the holiday data set covers. Inside them every rule below is
// known to hold, both in law and in the provider's answers (its one-off
// holidays and the years rules start or end are part of the rules). The
// recorded package answers other years with the provider's 204, its answer
// for "no holiday data for this request".
const (
	FirstHolidayYear = 2016
	LastHolidayYear  = 2035
)

// holiday is one element of a Nager.Date v4 answer, in its field order.
type holiday struct {
	Date             string   `json:"date"`
	Name             string   `json:"name"`
	CountryCode      string   `json:"countryCode"`
	NationalHoliday  bool     `json:"nationalHoliday"`
	SubdivisionCodes []string `json:"subdivisionCodes"`
	HolidayTypes     []string `json:"holidayTypes"`
}

// rule is one holiday of a country: its name, how its date falls in a
// year, its types, the regions that keep it (none: the whole country), and
// the years it applies (0: no bound). A rule may give no date for a year.
type rule struct {
	name    string
	date    func(year int) (time.Time, bool)
	types   []string
	regions []string
	from    int
	to      int
}

var public = []string{"Public"}

func fixed(month time.Month, day int) func(int) (time.Time, bool) {
	return func(y int) (time.Time, bool) { return time.Date(y, month, day, 0, 0, 0, 0, time.UTC), true }
}

func onYear(year int, month time.Month, day int) func(int) (time.Time, bool) {
	return func(y int) (time.Time, bool) {
		return time.Date(y, month, day, 0, 0, 0, 0, time.UTC), y == year
	}
}

// easter is the date offset days from Easter Sunday.
func easter(offset int) func(int) (time.Time, bool) {
	return func(y int) (time.Time, bool) { return easterSunday(y).AddDate(0, 0, offset), true }
}

// nth is the n-th weekday of a month (n < 0 counts from the month's end).
func nth(n int, weekday time.Weekday, month time.Month) func(int) (time.Time, bool) {
	return func(y int) (time.Time, bool) { return nthWeekday(y, month, weekday, n), true }
}

func nthWeekday(y int, month time.Month, weekday time.Weekday, n int) time.Time {
	if n < 0 {
		last := time.Date(y, month+1, 0, 0, 0, 0, 0, time.UTC)
		back := (int(last.Weekday()) - int(weekday) + 7) % 7
		return last.AddDate(0, 0, -back+7*(n+1))
	}
	first := time.Date(y, month, 1, 0, 0, 0, 0, time.UTC)
	ahead := (int(weekday) - int(first.Weekday()) + 7) % 7
	return first.AddDate(0, 0, ahead+7*(n-1))
}

// easterSunday is the Gregorian Easter Sunday (the anonymous Gregorian
// algorithm of Meeus, Jones and Butcher).
func easterSunday(y int) time.Time {
	a := y % 19
	b, c := y/100, y%100
	d, e := b/4, b%4
	f := (b + 8) / 25
	g := (b - f + 1) / 3
	h := (19*a + b - d - g + 15) % 30
	i, k := c/4, c%4
	l := (32 + 2*e + 2*i - h - k) % 7
	m := (a + 11*h + 22*l) / 451
	month := (h + l - 7*m + 114) / 31
	day := (h+l-7*m+114)%31 + 1
	return time.Date(y, time.Month(month), day, 0, 0, 0, 0, time.UTC)
}

// The countries of the data set, each with its rules in the order the
// provider lists them: holidays on the same date keep that order.
var countries = []struct {
	code  string
	rules []rule
}{
	{"AT", []rule{
		{name: "New Year's Day", date: fixed(1, 1)},
		{name: "Epiphany", date: fixed(1, 6)},
		{name: "National Holiday", date: fixed(5, 1)},
		{name: "Assumption Day", date: fixed(8, 15)},
		{name: "National Holiday", date: fixed(10, 26)},
		{name: "All Saints' Day", date: fixed(11, 1)},
		{name: "Immaculate Conception", date: fixed(12, 8)},
		{name: "Christmas Day", date: fixed(12, 25)},
		{name: "St. Stephen's Day", date: fixed(12, 26)},
		{name: "Easter Sunday", date: easter(0)},
		{name: "Easter Monday", date: easter(1)},
		{name: "Ascension Day", date: easter(39)},
		{name: "Pentecost", date: easter(49)},
		{name: "Whit Monday", date: easter(50)},
		{name: "Corpus Christi", date: easter(60)},
		{name: "Saint Joseph's Day", date: fixed(3, 19), types: []string{"School"}, regions: []string{"AT-2", "AT-6", "AT-7", "AT-8"}},
		{name: "Saint Florian's Day", date: fixed(5, 4), types: []string{"School"}, regions: []string{"AT-4"}},
		{name: "Saint Rupert's Day", date: fixed(9, 24), types: []string{"School"}, regions: []string{"AT-5"}},
		{name: "Saint Martin's Day", date: fixed(11, 11), types: []string{"School"}, regions: []string{"AT-1"}},
		{name: "Saint Leopold's Day", date: fixed(11, 15), types: []string{"School"}, regions: []string{"AT-3", "AT-9"}},
	}},
	{"BR", []rule{
		{name: "New Year's Day", date: fixed(1, 1)},
		{name: "Tiradentes", date: fixed(4, 21)},
		{name: "Labour Day", date: fixed(5, 1)},
		{name: "Constitutionalist Revolution of 1932", date: fixed(7, 9), regions: []string{"BR-SP"}},
		{name: "Independence Day", date: fixed(9, 7)},
		{name: "Our Lady of Aparecida", date: fixed(10, 12)},
		{name: "All Souls' Day", date: fixed(11, 2)},
		{name: "Republic Proclamation Day", date: fixed(11, 15)},
		{name: "Christmas Day", date: fixed(12, 25)},
		{name: "Carnival", date: easter(-47), types: []string{"Bank", "Optional"}},
		{name: "Carnival", date: easter(-48), types: []string{"Bank", "Optional"}},
		{name: "Easter Sunday", date: easter(0)},
		{name: "Good Friday", date: easter(-2)},
		{name: "Corpus Christi", date: easter(60)},
		{name: "Black Awareness Day", date: fixed(11, 20), from: 2024},
	}},
	{"DE", []rule{
		{name: "New Year's Day", date: fixed(1, 1)},
		{name: "Epiphany", date: fixed(1, 6), regions: []string{"DE-BW", "DE-BY", "DE-ST"}},
		{name: "Labour Day", date: fixed(5, 1)},
		{name: "Assumption Day", date: fixed(8, 15), regions: []string{"DE-SL"}},
		{name: "German Unity Day", date: fixed(10, 3)},
		{name: "All Saints' Day", date: fixed(11, 1), regions: []string{"DE-BW", "DE-BY", "DE-NW", "DE-RP", "DE-SL"}},
		{name: "Christmas Day", date: fixed(12, 25)},
		{name: "St. Stephen's Day", date: fixed(12, 26)},
		{name: "Good Friday", date: easter(-2)},
		{name: "Easter Sunday", date: easter(0), regions: []string{"DE-BB"}},
		{name: "Easter Monday", date: easter(1)},
		{name: "Ascension Day", date: easter(39)},
		{name: "Pentecost", date: easter(49), regions: []string{"DE-BB"}},
		{name: "Whit Monday", date: easter(50)},
		{name: "Corpus Christi", date: easter(60), regions: []string{"DE-BW", "DE-BY", "DE-HE", "DE-NW", "DE-RP", "DE-SL"}},
		{name: "International Women's Day", date: fixed(3, 8), regions: []string{"DE-BE"}, from: 2019, to: 2022},
		{name: "International Women's Day", date: fixed(3, 8), regions: []string{"DE-BE", "DE-MV"}, from: 2023},
		// Buß- und Bettag: the Wednesday eleven days before the first Sunday
		// of Advent, which always falls from 16 to 22 November.
		{name: "Repentance and Prayer Day", date: func(y int) (time.Time, bool) {
			d := time.Date(y, time.November, 22, 0, 0, 0, 0, time.UTC)
			return d.AddDate(0, 0, -(int(d.Weekday())-int(time.Wednesday)+7)%7), true
		}, regions: []string{"DE-SN"}},
		{name: "Liberation Day", date: onYear(2020, 5, 8), regions: []string{"DE-BE"}},
		{name: "Liberation Day", date: onYear(2025, 5, 8), regions: []string{"DE-BE"}},
		{name: "Reformation Day", date: fixed(10, 31), regions: []string{"DE-BB", "DE-MV", "DE-SN", "DE-ST", "DE-TH"}, to: 2016},
		{name: "Reformation Day", date: onYear(2017, 10, 31)},
		{name: "Reformation Day", date: fixed(10, 31), regions: []string{"DE-BB", "DE-MV", "DE-SN", "DE-ST", "DE-TH", "DE-HB", "DE-HH", "DE-NI", "DE-SH"}, from: 2018},
		{name: "World Children's Day", date: fixed(9, 20), regions: []string{"DE-TH"}, from: 2019},
		{name: "75th anniversary of the uprising of June 17, 1953", date: onYear(2028, 6, 17), regions: []string{"DE-BE"}},
	}},
	{"FR", []rule{
		{name: "New Year's Day", date: fixed(1, 1)},
		{name: "Labour Day", date: fixed(5, 1)},
		{name: "Victory in Europe Day", date: fixed(5, 8)},
		{name: "Bastille Day", date: fixed(7, 14)},
		{name: "Assumption Day", date: fixed(8, 15)},
		{name: "All Saints' Day", date: fixed(11, 1)},
		{name: "Armistice Day", date: fixed(11, 11)},
		{name: "Christmas Day", date: fixed(12, 25)},
		{name: "Easter Monday", date: easter(1)},
		{name: "Ascension Day", date: easter(39)},
		{name: "Whit Monday", date: easter(50)},
	}},
	{"GB", []rule{
		{name: "New Year's Day", date: fixed(1, 1), regions: []string{"GB-ENG", "GB-NIR", "GB-SCT", "GB-WLS"}},
		{name: "2 January", date: fixed(1, 2), regions: []string{"GB-SCT"}},
		{name: "Saint Patrick's Day", date: fixed(3, 17), regions: []string{"GB-NIR"}},
		{name: "Saint Andrew's Day", date: fixed(11, 30), regions: []string{"GB-SCT"}},
		{name: "Battle of the Boyne", date: fixed(7, 12), regions: []string{"GB-NIR"}},
		{name: "Summer Bank Holiday", date: nth(1, time.Monday, time.August), regions: []string{"GB-SCT"}},
		{name: "Summer Bank Holiday", date: nth(-1, time.Monday, time.August), regions: []string{"GB-ENG", "GB-WLS", "GB-NIR"}},
		{name: "Christmas Day", date: fixed(12, 25)},
		{name: "St. Stephen's Day", date: fixed(12, 26)},
		{name: "Good Friday", date: easter(-2)},
		{name: "Easter Monday", date: easter(1), regions: []string{"GB-ENG", "GB-WLS", "GB-NIR"}},
		// Moved to Friday 8 May in 2020 for the 75th anniversary of VE Day.
		{name: "Early May Bank Holiday", date: func(y int) (time.Time, bool) {
			if y == 2020 {
				return nthWeekday(y, time.May, time.Friday, 2), true
			}
			return nthWeekday(y, time.May, time.Monday, 1), true
		}},
		// Moved to 2 June in 2022 for the Platinum Jubilee.
		{name: "Spring Bank Holiday", date: func(y int) (time.Time, bool) {
			if y == 2022 {
				return time.Date(y, time.June, 2, 0, 0, 0, 0, time.UTC), true
			}
			return nthWeekday(y, time.May, time.Monday, -1), true
		}},
		{name: "Queen’s Platinum Jubilee", date: onYear(2022, 6, 3)},
		{name: "Queen’s State Funeral", date: onYear(2022, 9, 19)},
		{name: "Coronation Bank Holiday", date: onYear(2023, 5, 8)},
		{name: "World Cup Bank Holiday", date: onYear(2026, 6, 15), regions: []string{"GB-SCT"}},
	}},
	{"IE", []rule{
		{name: "New Year's Day", date: fixed(1, 1)},
		{name: "Saint Patrick's Day", date: fixed(3, 17)},
		{name: "May Day", date: nth(1, time.Monday, time.May)},
		{name: "June Holiday", date: nth(1, time.Monday, time.June)},
		{name: "August Holiday", date: nth(1, time.Monday, time.August)},
		{name: "October Holiday", date: nth(-1, time.Monday, time.October)},
		{name: "Christmas Day", date: fixed(12, 25)},
		{name: "St. Stephen's Day", date: fixed(12, 26)},
		{name: "Good Friday", date: easter(-2), types: []string{"Bank", "School"}},
		{name: "Easter Monday", date: easter(1)},
		// Saint Brigid's Day: 1 February when a Friday, else the first Monday of February.
		{name: "Saint Brigid's Day", date: func(y int) (time.Time, bool) {
			if first := time.Date(y, time.February, 1, 0, 0, 0, 0, time.UTC); first.Weekday() == time.Friday {
				return first, true
			}
			return nthWeekday(y, time.February, time.Monday, 1), true
		}, from: 2023},
	}},
	{"IT", []rule{
		{name: "New Year's Day", date: fixed(1, 1)},
		{name: "Epiphany", date: fixed(1, 6)},
		{name: "Liberation Day", date: fixed(4, 25)},
		{name: "International Workers Day", date: fixed(5, 1)},
		{name: "Republic Day", date: fixed(6, 2)},
		{name: "Assumption Day", date: fixed(8, 15)},
		{name: "All Saints Day", date: fixed(11, 1)},
		{name: "Immaculate Conception", date: fixed(12, 8)},
		{name: "Christmas Day", date: fixed(12, 25)},
		{name: "St. Stephen's Day", date: fixed(12, 26)},
		{name: "Easter Sunday", date: easter(0)},
		{name: "Easter Monday", date: easter(1)},
		{name: "Whit Monday", date: easter(50), regions: []string{"IT-32"}},
		{name: "St. Francis of Assisi's Day", date: fixed(10, 4), from: 2026},
	}},
	{"NL", []rule{
		{name: "New Year's Day", date: fixed(1, 1)},
		{name: "King's Day", date: fixed(4, 27)},
		{name: "Christmas Day", date: fixed(12, 25)},
		{name: "St. Stephen's Day", date: fixed(12, 26)},
		{name: "Good Friday", date: easter(-2), types: []string{"School", "Authorities", "Observance"}},
		{name: "Easter Sunday", date: easter(0)},
		{name: "Easter Monday", date: easter(1)},
		{name: "Ascension Day", date: easter(39)},
		{name: "Pentecost", date: easter(49)},
		{name: "Whit Monday", date: easter(50)},
		{name: "Liberation Day", date: fixed(5, 5), types: []string{"School", "Authorities"}},
	}},
	{"NO", []rule{
		{name: "New Year's Day", date: fixed(1, 1)},
		{name: "Labour Day", date: fixed(5, 1)},
		{name: "Constitution Day", date: fixed(5, 17)},
		{name: "Christmas Day", date: fixed(12, 25)},
		{name: "St. Stephen's Day", date: fixed(12, 26)},
		{name: "Maundy Thursday", date: easter(-3)},
		{name: "Good Friday", date: easter(-2)},
		{name: "Easter Sunday", date: easter(0)},
		{name: "Easter Monday", date: easter(1)},
		{name: "Ascension Day", date: easter(39)},
		{name: "Pentecost", date: easter(49)},
		{name: "Whit Monday", date: easter(50)},
	}},
	{"PL", []rule{
		{name: "New Year's Day", date: fixed(1, 1)},
		{name: "Epiphany", date: fixed(1, 6)},
		{name: "May Day", date: fixed(5, 1)},
		{name: "Constitution Day", date: fixed(5, 3)},
		{name: "Assumption Day", date: fixed(8, 15)},
		{name: "All Saints' Day", date: fixed(11, 1)},
		{name: "Independence Day", date: fixed(11, 11)},
		{name: "Christmas Day", date: fixed(12, 25)},
		{name: "St. Stephen's Day", date: fixed(12, 26)},
		{name: "Easter Sunday", date: easter(0)},
		{name: "Easter Monday", date: easter(1)},
		{name: "Pentecost", date: easter(49)},
		{name: "Corpus Christi", date: easter(60)},
		// The centenary of independence added Monday 12 November 2018.
		{name: "Independence Day", date: onYear(2018, 11, 12)},
		{name: "Christmas Eve", date: fixed(12, 24), from: 2025},
	}},
	// Portugal as in the provider's recorded answer for 2027: Azores Day on
	// Whit Monday, Carnival an optional day.
	{"PT", []rule{
		{name: "New Year's Day", date: fixed(1, 1)},
		{name: "Carnival", date: easter(-47), types: []string{"Optional"}},
		{name: "Good Friday", date: easter(-2)},
		{name: "Easter Sunday", date: easter(0)},
		{name: "Freedom Day", date: fixed(4, 25)},
		{name: "Labour Day", date: fixed(5, 1)},
		{name: "Azores Day", date: easter(50), regions: []string{"PT-20"}},
		{name: "Corpus Christi", date: easter(60)},
		{name: "Portugal Day", date: fixed(6, 10)},
		{name: "Madeira Day", date: fixed(7, 1), regions: []string{"PT-30"}},
		{name: "Assumption Day", date: fixed(8, 15)},
		{name: "Republic Day", date: fixed(10, 5)},
		{name: "All Saints Day", date: fixed(11, 1)},
		{name: "Restoration of Independence", date: fixed(12, 1)},
		{name: "Immaculate Conception", date: fixed(12, 8)},
		{name: "Christmas Day", date: fixed(12, 25)},
	}},
	{"US", []rule{
		{name: "New Year's Day", date: fixed(1, 1), types: []string{"Public", "Bank"}},
		{name: "Martin Luther King, Jr. Day", date: nth(3, time.Monday, time.January), types: []string{"Public", "Bank"}},
		{name: "Presidents Day", date: nth(3, time.Monday, time.February), types: []string{"Public", "Bank"}},
		{name: "Memorial Day", date: nth(-1, time.Monday, time.May), types: []string{"Public", "Bank"}},
		{name: "Independence Day", date: fixed(7, 4), types: []string{"Public", "Bank"}},
		{name: "Truman Day", date: fixed(5, 8), types: []string{"School", "Authorities"}, regions: []string{"US-MO"}},
		{name: "Labour Day", date: nth(1, time.Monday, time.September), types: []string{"Public", "Bank"}},
		{name: "Columbus Day", date: nth(2, time.Monday, time.October), regions: []string{
			"US-AL", "US-AZ", "US-CO", "US-CT", "US-GA", "US-ID", "US-IL", "US-IN", "US-IA", "US-KS", "US-KY",
			"US-LA", "US-ME", "US-MD", "US-MA", "US-MS", "US-MO", "US-MT", "US-NE", "US-NH", "US-NJ", "US-NM",
			"US-NY", "US-NC", "US-OH", "US-OK", "US-PA", "US-RI", "US-SC", "US-TN", "US-UT", "US-VA", "US-WV"}},
		{name: "Columbus Day", date: nth(2, time.Monday, time.October), types: []string{"Bank"}},
		{name: "Veterans Day", date: fixed(11, 11), types: []string{"Public", "Bank"}},
		{name: "Thanksgiving Day", date: nth(4, time.Thursday, time.November), types: []string{"Public", "Bank"}},
		{name: "Christmas Day", date: fixed(12, 25), types: []string{"Public", "Bank"}},
		{name: "Good Friday", date: easter(-2), regions: []string{"US-CT", "US-DE", "US-HI", "US-IN", "US-KY", "US-LA", "US-NC", "US-ND", "US-NJ", "US-TN"}},
		{name: "Good Friday", date: easter(-2), types: []string{"Optional"}, regions: []string{"US-TX"}},
		{name: "Juneteenth National Independence Day", date: fixed(6, 19), types: []string{"Public", "Bank"}, from: 2021},
		{name: "Indigenous Peoples' Day", date: nth(2, time.Monday, time.October), regions: []string{"US-AK", "US-HI", "US-MN", "US-SD", "US-VT"}, to: 2017},
		{name: "Indigenous Peoples' Day", date: nth(2, time.Monday, time.October), regions: []string{"US-AK", "US-HI", "US-IA", "US-MN", "US-NC", "US-SD", "US-VT"}, from: 2018, to: 2018},
		{name: "Indigenous Peoples' Day", date: nth(2, time.Monday, time.October), regions: []string{
			"US-AK", "US-AL", "US-CA", "US-HI", "US-IA", "US-LA", "US-ME", "US-MI", "US-MN", "US-NC", "US-NM",
			"US-OK", "US-SD", "US-VT", "US-WI"}, from: 2019, to: 2019},
		{name: "Indigenous Peoples' Day", date: nth(2, time.Monday, time.October), regions: []string{
			"US-AK", "US-AL", "US-CA", "US-HI", "US-IA", "US-LA", "US-ME", "US-MI", "US-MN", "US-NC", "US-NE",
			"US-NM", "US-OK", "US-SD", "US-VA", "US-VT", "US-WI"}, from: 2020, to: 2020},
		{name: "Indigenous Peoples' Day", date: nth(2, time.Monday, time.October), regions: []string{
			"US-AK", "US-AL", "US-CA", "US-HI", "US-IA", "US-LA", "US-ME", "US-MI", "US-MN", "US-NC", "US-NE",
			"US-NM", "US-OK", "US-OR", "US-SD", "US-TX", "US-VA", "US-VT", "US-WI"}, from: 2021},
		{name: "Lincoln's Birthday", date: fixed(2, 12), types: []string{"Observance"}, regions: []string{"US-CA", "US-CT", "US-IL", "US-IN", "US-KY", "US-MI", "US-NY", "US-MO", "US-OH"}},
	}},
}

// buildHolidays lists every country's holidays for the covered years,
// each country's year sorted by date as the provider answers it.
func buildHolidays() ([]byte, error) {
	var all []holiday
	for _, c := range countries {
		for y := FirstHolidayYear; y <= LastHolidayYear; y++ {
			var year []holiday
			for _, r := range c.rules {
				if (r.from != 0 && y < r.from) || (r.to != 0 && y > r.to) {
					continue
				}
				d, ok := r.date(y)
				if !ok {
					continue
				}
				types := r.types
				if types == nil {
					types = public
				}
				year = append(year, holiday{
					Date:             d.Format(time.DateOnly),
					Name:             r.name,
					CountryCode:      c.code,
					NationalHoliday:  len(r.regions) == 0,
					SubdivisionCodes: r.regions,
					HolidayTypes:     types,
				})
			}
			slices.SortStableFunc(year, func(a, b holiday) int { return cmp.Compare(a.Date, b.Date) })
			all = append(all, year...)
		}
	}
	return marshal(all)
}
