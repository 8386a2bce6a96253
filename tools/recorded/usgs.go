package recorded

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The simulated USGS FDSN event service answers GeoJSON queries from the
// recorded catalog, as of the moment the catalog was generated.

const (
	usgsDocs    = "https://earthquake.usgs.gov/fdsnws/event/1"
	usgsVersion = "1.14.1"
	usgsMaxRows = 20000
	// usgsDefaultAge is how far back a query without starttime reaches.
	usgsDefaultAge = 30 * 24 * time.Hour
)

var usgsData = &dataset[*usgsCatalog]{file: "usgs_catalog.json.gz", decode: decodeUSGSCatalog}

// usgsCatalog is every recorded event, newest first, and the moment the
// catalog was generated: the service's "now".
type usgsCatalog struct {
	now    time.Time
	events []quake
}

// quake is one recorded event: its GeoJSON feature as recorded, and what
// queries filter, order and bound it by.
type quake struct {
	feature json.RawMessage
	time    int64 // ms since the epoch
	mag     *float64
	coords  []float64 // longitude, latitude, depth
}

func decodeUSGSCatalog(raw []byte) (*usgsCatalog, error) {
	var c struct {
		Metadata struct {
			Generated int64 `json:"generated"`
		} `json:"metadata"`
		Features []json.RawMessage `json:"features"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, err
	}
	out := &usgsCatalog{now: time.UnixMilli(c.Metadata.Generated).UTC()}
	for _, f := range c.Features {
		var e struct {
			Properties struct {
				Time int64    `json:"time"`
				Mag  *float64 `json:"mag"`
			} `json:"properties"`
			Geometry struct {
				Coordinates []float64 `json:"coordinates"`
			} `json:"geometry"`
		}
		if err := json.Unmarshal(f, &e); err != nil {
			return nil, err
		}
		if len(e.Geometry.Coordinates) != 3 {
			return nil, errors.New("an event without three coordinates")
		}
		out.events = append(out.events, quake{feature: f, time: e.Properties.Time, mag: e.Properties.Mag, coords: e.Geometry.Coordinates})
	}
	return out, nil
}

// usgsQuery is a validated query.
type usgsQuery struct {
	start, end     *int64 // ms, inclusive
	minMag, maxMag *float64
	limit          *int
	offset         int
	orderBy        string
	format         string
}

// usgsNotSimulated are the parameters the service accepts that the
// recorded catalog does not simulate.
var usgsNotSimulated = codeSet(`minlatitude minlat maxlatitude maxlat minlongitude minlon maxlongitude
	maxlon latitude lat longitude lon minradius maxradius minradiuskm maxradiuskm mindepth maxdepth
	magnitudetype magtype includeallorigins includeallmagnitudes includearrivals eventid catalog
	contributor updatedafter callback eventtype reviewstatus minmmi maxmmi mincdi maxcdi minfelt
	alertlevel mingap maxgap minsig maxsig producttype productcode kmlcolorby kmlanimated nodata
	includedeleted includesuperseded`)

// usgsError is an answer of the service's text/plain error page.
type usgsError struct {
	status  int
	message string
}

func (e *usgsError) Error() string { return e.message }

func badRequest(format string, args ...any) *usgsError {
	return &usgsError{http.StatusBadRequest, fmt.Sprintf(format, args...)}
}

// serveUSGS answers GET /fdsnws/event/1/query as the service does.
func serveUSGS(w http.ResponseWriter, r *http.Request) {
	cat := usgsData.get()
	q, err := parseUSGSQuery(r.URL.RawQuery)
	if err != nil {
		writeUSGSError(w, r, cat.now, err)
		return
	}
	if q.start == nil {
		start := cat.now.Add(-usgsDefaultAge).UnixMilli()
		q.start = &start
	}
	var matched []quake
	for _, e := range cat.events {
		if q.matches(e) {
			matched = append(matched, e)
		}
	}
	if q.limit == nil && len(matched) > usgsMaxRows {
		writeUSGSError(w, r, cat.now, badRequest("%d matching events exceeds search limit of %d. Modify the search to match fewer events.", len(matched), usgsMaxRows))
		return
	}
	q.sort(matched)
	matched = matched[min(q.offset-1, len(matched)):]
	if q.limit != nil && len(matched) > *q.limit {
		matched = matched[:*q.limit]
	}
	body, err := usgsCollection(cat.now, requestURI(r), q, matched)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeBody(w, http.StatusOK, contentJSON, body)
}

func parseUSGSQuery(raw string) (usgsQuery, error) {
	q := usgsQuery{offset: 1, orderBy: "time", format: "quakeml"}
	notSimulated := ""
	for _, p := range orderedQuery(raw) {
		if p.value == "" || p.name == "method" || p.name == "jsonerror" {
			continue // the service skips empty values
		}
		var err error
		switch p.name {
		case "starttime", "start":
			q.start, err = usgsTime(p)
		case "endtime", "end":
			q.end, err = usgsTime(p)
		case "minmagnitude", "minmag":
			q.minMag, err = usgsFloat(p)
		case "maxmagnitude", "maxmag":
			q.maxMag, err = usgsFloat(p)
		case "limit":
			var n int
			n, err = usgsInteger(p, 0, usgsMaxRows)
			q.limit = &n
		case "offset":
			q.offset, err = usgsInteger(p, 1, -1)
		case "orderby":
			q.orderBy, err = usgsEnum(p, "time", "time-asc", "magnitude", "magnitude-asc")
		case "format":
			q.format, err = usgsEnum(p, "quakeml", "geojson", "csv", "kml", "kmlraw", "xml", "text", "cap")
		default:
			if !usgsNotSimulated[p.name] {
				return q, badRequest("Unknown parameter %q.", p.name)
			}
			if notSimulated == "" {
				notSimulated = p.name
			}
		}
		if err != nil {
			return q, err
		}
	}
	switch {
	case notSimulated != "":
		return q, &usgsError{http.StatusNotImplemented, fmt.Sprintf("The %s parameter is not simulated by the recorded catalog, which answers starttime, endtime, minmagnitude, maxmagnitude, limit, offset and orderby.", notSimulated)}
	case q.format != "geojson":
		return q, &usgsError{http.StatusNotImplemented, fmt.Sprintf("Format %q is not simulated by the recorded catalog; ask for format=geojson.", q.format)}
	}
	return q, nil
}

// usgsTimestamp is what the service's time parser accepts that this one
// does too: a date, optionally a time of day, optionally a zone.
var usgsTimestamp = regexp.MustCompile(`^(\d{4}-\d{2}-\d{2})(?:[T ](\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?))?(Z|[+-]\d{2}:?\d{2})?$`)

func usgsTime(p param) (*int64, error) {
	m := usgsTimestamp.FindStringSubmatch(strings.TrimSpace(p.value))
	if m != nil {
		clock := m[2]
		if clock == "" {
			clock = "00:00:00"
		} else if len(clock) == 5 {
			clock += ":00"
		}
		zone := strings.Replace(m[3], ":", "", 1)
		switch zone {
		case "", "Z":
			zone = "+0000"
		}
		if t, err := time.Parse("2006-01-02T15:04:05-0700", m[1]+"T"+clock[:8]+zone); err == nil {
			// The service reads whole seconds.
			ms := t.Unix() * 1000
			return &ms, nil
		}
	}
	return nil, badRequest("Bad %s value %q. Valid values are ISO-8601 timestamps.", p.name, p.value)
}

// usgsNumeric is PHP's is_numeric: an optionally signed decimal, with an
// optional exponent, between optional whitespace.
var usgsNumeric = regexp.MustCompile(`^[ \t\n\r\v\f]*[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?[ \t\n\r\v\f]*$`)

func usgsFloat(p param) (*float64, error) {
	if usgsNumeric.MatchString(p.value) {
		if f, err := strconv.ParseFloat(strings.TrimSpace(p.value), 64); err == nil {
			return &f, nil
		}
	}
	return nil, badRequest("Bad %s value %q. Valid values are numeric", p.name, p.value)
}

// usgsInteger accepts digits only, from lo to hi (hi < 0: no upper bound).
func usgsInteger(p param, lo, hi int) (int, error) {
	n, err := strconv.Atoi(p.value)
	digits := strings.Trim(p.value, "0123456789") == ""
	if !digits || err != nil || n < lo || (hi >= 0 && n > hi) {
		bounds := fmt.Sprintf("%d <= %s", lo, p.name)
		if hi >= 0 {
			bounds += fmt.Sprintf(" <= %d", hi)
		}
		return 0, badRequest("Bad %s value %q. Valid values are %s", p.name, p.value, bounds)
	}
	return n, nil
}

func usgsEnum(p param, values ...string) (string, error) {
	if slices.Contains(values, p.value) {
		return p.value, nil
	}
	return "", badRequest("Bad %s value %q. Valid values are: \"%s\".", p.name, p.value, strings.Join(values, `", "`))
}

func (q usgsQuery) matches(e quake) bool {
	switch {
	case q.start != nil && e.time < *q.start, q.end != nil && e.time > *q.end:
		return false
	case q.minMag != nil && (e.mag == nil || *e.mag < *q.minMag):
		return false
	case q.maxMag != nil && (e.mag == nil || *e.mag > *q.maxMag):
		return false
	}
	return true
}

// sort orders events as the service's database does: an event without a
// magnitude sorts below every magnitude; equal keys keep time order.
func (q usgsQuery) sort(events []quake) {
	byMag := func(a, b quake) int {
		switch {
		case a.mag == nil && b.mag == nil:
			return 0
		case a.mag == nil:
			return -1
		case b.mag == nil:
			return 1
		}
		return cmp.Compare(*a.mag, *b.mag)
	}
	slices.SortStableFunc(events, func(a, b quake) int {
		switch q.orderBy {
		case "time-asc":
			return cmp.Compare(a.time, b.time)
		case "magnitude":
			return cmp.Or(byMag(b, a), cmp.Compare(b.time, a.time))
		case "magnitude-asc":
			return cmp.Or(byMag(a, b), cmp.Compare(a.time, b.time))
		}
		return cmp.Compare(b.time, a.time)
	})
}

// usgsMetadata is the metadata of an answer, in the service's order.
type usgsMetadata struct {
	Generated int64  `json:"generated"`
	URL       string `json:"url"`
	Title     string `json:"title"`
	Status    int    `json:"status"`
	API       string `json:"api"`
	Limit     *int   `json:"limit,omitempty"`
	Offset    *int   `json:"offset,omitempty"`
	Count     int    `json:"count"`
}

// usgsCollection writes the answer: the recorded features as they are,
// and a bounding box when the features span one.
func usgsCollection(now time.Time, uri string, q usgsQuery, events []quake) ([]byte, error) {
	meta := usgsMetadata{
		Generated: now.UnixMilli(),
		URL:       USGSOrigin + uri,
		Title:     "USGS Earthquakes",
		Status:    http.StatusOK,
		API:       usgsVersion,
		Count:     len(events),
	}
	if q.limit != nil {
		meta.Limit, meta.Offset = q.limit, &q.offset
	}
	var b bytes.Buffer
	b.WriteString(`{"type":"FeatureCollection","metadata":`)
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(meta); err != nil {
		return nil, err
	}
	b.Truncate(b.Len() - 1) // the encoder's newline
	b.WriteString(`,"features":[`)
	lo, hi := [3]float64{180, 90, 1000}, [3]float64{-180, -90, -100}
	for i, e := range events {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(e.feature)
		for k := range 3 {
			lo[k], hi[k] = min(lo[k], e.coords[k]), max(hi[k], e.coords[k])
		}
	}
	b.WriteByte(']')
	if lo[0] < hi[0] && lo[1] < hi[1] && lo[2] < hi[2] {
		b.WriteString(`,"bbox":[`)
		for i, v := range [6]float64{lo[0], lo[1], lo[2], hi[0], hi[1], hi[2]} {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.FormatFloat(v, 'f', -1, 64))
		}
		b.WriteByte(']')
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// writeUSGSError writes the service's text/plain error page.
func writeUSGSError(w http.ResponseWriter, r *http.Request, now time.Time, err error) {
	var e *usgsError
	if !errors.As(err, &e) {
		e = &usgsError{http.StatusInternalServerError, err.Error()}
	}
	page := strings.Join([]string{
		fmt.Sprintf("Error %d: %s", e.status, http.StatusText(e.status)),
		"",
		e.message,
		"",
		"Usage details are available from " + usgsDocs,
		"",
		"Request:",
		requestURI(r),
		"",
		"Request Submitted:",
		now.Format("2006-01-02T15:04:05+00:00"),
		"",
		"Service version:",
		usgsVersion,
	}, "\n")
	writeBody(w, e.status, contentText, []byte(page+"\n"))
}

// requestURI is the path and query as the client sent them.
func requestURI(r *http.Request) string {
	if r.RequestURI != "" {
		return r.RequestURI
	}
	return r.URL.RequestURI()
}

// writeBody writes a complete answer.
func writeBody(w http.ResponseWriter, status int, contentType string, body []byte) {
	if contentType != "" {
		w.Header().Set("Content-Type", contentType)
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
