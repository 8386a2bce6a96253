package recorded

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
)

// The simulated Nager.Date v4 service answers
// /api/v4/Holidays/{countryCode}/{year} from the recorded holidays.

var nagerData = &dataset[*holidayBook]{file: "nager_holidays.json.gz", decode: decodeHolidays}

// holidayBook holds each recorded country's holidays by year, each
// holiday as the service writes it, and the years recorded.
type holidayBook struct {
	years       map[string]map[int][]json.RawMessage
	first, last map[string]int
}

func decodeHolidays(raw []byte) (*holidayBook, error) {
	var all []json.RawMessage
	if err := json.Unmarshal(raw, &all); err != nil {
		return nil, err
	}
	book := &holidayBook{years: map[string]map[int][]json.RawMessage{}, first: map[string]int{}, last: map[string]int{}}
	for _, h := range all {
		var v struct {
			Date        string `json:"date"`
			CountryCode string `json:"countryCode"`
		}
		if err := json.Unmarshal(h, &v); err != nil {
			return nil, err
		}
		year, err := strconv.Atoi(strings.SplitN(v.Date, "-", 2)[0])
		if err != nil || v.CountryCode == "" {
			return nil, fmt.Errorf("a holiday without a date or country: %s", h)
		}
		c := v.CountryCode
		if book.years[c] == nil {
			book.years[c] = map[int][]json.RawMessage{}
			book.first[c], book.last[c] = year, year
		}
		book.years[c][year] = append(book.years[c][year], h)
		book.first[c], book.last[c] = min(book.first[c], year), max(book.last[c], year)
	}
	return book, nil
}

// serveNager answers GET /api/v4/Holidays/{country}/{year} as the service
// does: 400 for a year that is not a number, 404 for a code that is not a
// country, the holidays when recorded. A real country and year the data
// does not hold get 204, the service's answer when it has no holiday data
// for a request: never an empty list, which would say there are no
// holidays, nor a 404, which says the country does not exist.
func serveNager(w http.ResponseWriter, r *http.Request) {
	yearText := r.PathValue("year")
	year, err := strconv.ParseInt(yearText, 10, 32)
	if err != nil {
		writeProblem(w, http.StatusBadRequest, map[string][]string{"year": {fmt.Sprintf("The value '%s' is not valid.", yearText)}})
		return
	}
	country := strings.ToUpper(r.PathValue("country"))
	if !iso3166[country] {
		writeProblem(w, http.StatusNotFound, nil)
		return
	}
	book := nagerData.get()
	if y := int(year); book.years[country] != nil && y >= book.first[country] && y <= book.last[country] {
		writeBody(w, http.StatusOK, contentJSONUTF, jsonArray(book.years[country][y]))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// writeProblem writes the service's RFC 9457 problem body.
func writeProblem(w http.ResponseWriter, status int, errs map[string][]string) {
	p := struct {
		Type    string              `json:"type"`
		Title   string              `json:"title"`
		Status  int                 `json:"status"`
		Errors  map[string][]string `json:"errors,omitempty"`
		TraceID string              `json:"traceId"`
	}{
		Type:    "https://tools.ietf.org/html/rfc9110#section-15.5.5",
		Title:   "Not Found",
		Status:  status,
		Errors:  errs,
		TraceID: fmt.Sprintf("00-%016x%016x-%016x-00", rand.Uint64(), rand.Uint64(), rand.Uint64()),
	}
	if status == http.StatusBadRequest {
		p.Type, p.Title = "https://tools.ietf.org/html/rfc9110#section-15.5.1", "One or more validation errors occurred."
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(p)
	writeBody(w, status, contentProblem, bytes.TrimSuffix(b.Bytes(), []byte("\n")))
}

// jsonArray joins JSON values into an array.
func jsonArray(values []json.RawMessage) []byte {
	b := []byte{'['}
	for i, v := range values {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, v...)
	}
	return append(b, ']')
}
