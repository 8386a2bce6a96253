package gen

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/toolgate/toolgate/tools/recorded/internal/geo"
)

// The catalog's period. Its end is also when the catalog was generated,
// the moment the recorded package's USGS answers as of.
var (
	catalogStart = time.Date(2024, time.September, 16, 0, 0, 0, 0, time.UTC)
	catalogEnd   = time.Date(2024, time.October, 14, 0, 0, 0, 0, time.UTC)
)

// How many events to synthesize besides the published ones: small events
// of the regional networks, and M4+ events of the world.
const (
	smallEvents  = 300
	globalEvents = 150
)

// The published samples are answers to queries over the last days of
// September; the synthesized events keep out of their way, so that the
// same queries still give the same answers.
var (
	sampleWindowStart = time.Date(2024, time.September, 25, 0, 0, 0, 0, time.UTC)
	sampleWindowEnd   = time.Date(2024, time.September, 30, 0, 0, 0, 0, time.UTC)
	sampleMinMag      = 5.4
)

type feature struct {
	Type       string     `json:"type"`
	Properties properties `json:"properties"`
	Geometry   geometry   `json:"geometry"`
	ID         string     `json:"id"`
}

type geometry struct {
	Type        string     `json:"type"`
	Coordinates [3]float64 `json:"coordinates"`
}

// properties are a USGS event's properties, in the provider's order.
type properties struct {
	Mag     *float64 `json:"mag"`
	Place   *string  `json:"place"`
	Time    int64    `json:"time"`
	Updated int64    `json:"updated"`
	TZ      *int     `json:"tz"`
	URL     string   `json:"url"`
	Detail  string   `json:"detail"`
	Felt    *int     `json:"felt"`
	CDI     *float64 `json:"cdi"`
	MMI     *float64 `json:"mmi"`
	Alert   *string  `json:"alert"`
	Status  string   `json:"status"`
	Tsunami int      `json:"tsunami"`
	Sig     int      `json:"sig"`
	Net     string   `json:"net"`
	Code    string   `json:"code"`
	IDs     string   `json:"ids"`
	Sources string   `json:"sources"`
	Types   string   `json:"types"`
	Nst     *int     `json:"nst"`
	Dmin    *float64 `json:"dmin"`
	RMS     float64  `json:"rms"`
	Gap     *float64 `json:"gap"`
	MagType string   `json:"magType"`
	Type    string   `json:"type"`
	Title   string   `json:"title"`
}

// catalogMetadata is the metadata of a USGS answer without a limit.
type catalogMetadata struct {
	Generated int64  `json:"generated"`
	URL       string `json:"url"`
	Title     string `json:"title"`
	Status    int    `json:"status"`
	API       string `json:"api"`
	Count     int    `json:"count"`
}

type catalog struct {
	Type     string            `json:"type"`
	Metadata catalogMetadata   `json:"metadata"`
	Features []json.RawMessage `json:"features"`
	BBox     []float64         `json:"bbox"`
}

// event is a catalog entry while the catalog is built.
type event struct {
	raw      json.RawMessage
	time     int64
	lon, lat float64
	depth    float64
}

// buildCatalog writes the catalog as USGS answers a query for the whole
// period in GeoJSON, newest first: the published events verbatim, and the
// synthesized ones around them. ten is the published answer the catalog's
// last day of September must keep giving.
func buildCatalog(two, ten []byte) ([]byte, error) {
	var events []event
	used := map[string]bool{}
	var quietFrom int64 = math.MaxInt64 // the oldest event of ten
	for i, sample := range [][]byte{two, ten} {
		var collection struct {
			Features []json.RawMessage `json:"features"`
		}
		if err := json.Unmarshal(sample, &collection); err != nil {
			return nil, fmt.Errorf("sample: %w", err)
		}
		for _, raw := range collection.Features {
			var f struct {
				ID         string `json:"id"`
				Properties struct {
					Time int64 `json:"time"`
				} `json:"properties"`
				Geometry struct {
					Coordinates []float64 `json:"coordinates"`
				} `json:"geometry"`
			}
			if err := json.Unmarshal(raw, &f); err != nil || f.ID == "" || len(f.Geometry.Coordinates) != 3 {
				return nil, errors.New("sample: a feature without id, time or coordinates")
			}
			c := f.Geometry.Coordinates
			events = append(events, event{raw: raw, time: f.Properties.Time, lon: c[0], lat: c[1], depth: c[2]})
			used[f.ID] = true
			if i == 1 {
				quietFrom = min(quietFrom, f.Properties.Time)
			}
		}
	}

	g := &catalogGen{rng: newRNG(20240916), used: used, quietFrom: quietFrom}
	for range smallEvents {
		f := g.small()
		if err := g.add(&events, f); err != nil {
			return nil, err
		}
	}
	for range globalEvents {
		f := g.global()
		if err := g.add(&events, f); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(events, func(a, b event) int { return cmp.Compare(b.time, a.time) })

	out := catalog{
		Type: "FeatureCollection",
		Metadata: catalogMetadata{
			Generated: catalogEnd.UnixMilli(),
			URL: "https://earthquake.usgs.gov/fdsnws/event/1/query?format=geojson&starttime=" +
				catalogStart.Format(time.DateOnly) + "&endtime=" + catalogEnd.Format(time.DateOnly) + "&orderby=time",
			Title:  "USGS Earthquakes",
			Status: 200,
			API:    "1.14.1",
			Count:  len(events),
		},
	}
	box := []float64{180, 90, 1000, -180, -90, -100}
	for _, e := range events {
		out.Features = append(out.Features, e.raw)
		box[0], box[1], box[2] = min(box[0], e.lon), min(box[1], e.lat), min(box[2], e.depth)
		box[3], box[4], box[5] = max(box[3], e.lon), max(box[4], e.lat), max(box[5], e.depth)
	}
	out.BBox = box
	return marshal(out)
}

type catalogGen struct {
	rng       *rng
	used      map[string]bool
	quietFrom int64
}

func (g *catalogGen) add(events *[]event, f feature) error {
	raw, err := marshal(f)
	if err != nil {
		return err
	}
	c := f.Geometry.Coordinates
	*events = append(*events, event{raw: raw, time: f.Properties.Time, lon: c[0], lat: c[1], depth: c[2]})
	return nil
}

// eventTime draws a time in the period that leaves the samples' answers
// as they are.
func (g *catalogGen) eventTime(mag float64) time.Time {
	for {
		t := catalogStart.Add(time.Duration(g.rng.Int64N(int64(catalogEnd.Sub(catalogStart)))))
		t = t.Truncate(time.Millisecond)
		if ms := t.UnixMilli(); ms >= g.quietFrom && t.Before(sampleWindowEnd) {
			continue
		}
		if mag >= sampleMinMag && !t.Before(sampleWindowStart) && !t.After(sampleWindowEnd) {
			continue
		}
		return t
	}
}

// magnitude draws a Gutenberg-Richter magnitude (b = 1) from the given
// floor, below the ceiling.
func (g *catalogGen) magnitude(floor, ceiling float64) float64 {
	for {
		if m := floor + g.rng.ExpFloat64()/math.Ln10; m < ceiling {
			return m
		}
	}
}

func (g *catalogGen) uniform(lo, hi float64) float64 { return lo + (hi-lo)*g.rng.Float64() }

func (g *catalogGen) chance(p float64) bool { return g.rng.Float64() < p }

// near draws a point within km of a place, denser towards it.
func (g *catalogGen) near(lat, lon, km float64) (float64, float64) {
	return geo.Destination(lat, lon, g.uniform(0, 360), km*math.Sqrt(g.rng.Float64()))
}

// small synthesizes an event of a regional network.
func (g *catalogGen) small() feature {
	total := 0
	for _, n := range networks {
		total += n.weight
	}
	pick := g.rng.IntN(total)
	var n network
	for _, n = range networks {
		if pick -= n.weight; pick < 0 {
			break
		}
	}
	home := n.towns[g.rng.IntN(len(n.towns))]
	lat, lon := g.near(home.lat, home.lon, n.spreadKm)
	place := placeName(lat, lon, n.towns, n.region)
	if n.offshore != "" && distanceKm(lat, lon, nearest(lat, lon, n.towns)) > 30 {
		place = n.offshore
	}
	mag := round(g.magnitude(n.complete, 3.9), n.decimals)
	t := g.eventTime(mag)
	kind := "earthquake"
	depth := round(g.uniform(n.depth[0], n.depth[1]), n.depthDecim)
	if (n.net == "ci" || n.net == "uw" || n.net == "nc") && g.chance(0.03) {
		kind, depth = "quarry blast", round(g.uniform(-0.5, 0.5), n.depthDecim)
	}
	automatic := t.After(catalogEnd.Add(-48*time.Hour)) || g.chance(0.4)
	p := properties{
		Mag:     &mag,
		Place:   &place,
		Time:    t.UnixMilli(),
		Net:     n.net,
		Code:    g.code(n.net, t),
		MagType: n.magType,
		Type:    kind,
		RMS:     round(g.uniform(0.02, 0.6), 2),
		Status:  "reviewed",
		Tsunami: 0,
	}
	types := []string{"origin", "phase-data"}
	if n.net == "ci" || n.net == "nc" {
		types = append(types, "nearby-cities")
	}
	if automatic {
		p.Status = "automatic"
		p.Updated = t.Add(time.Duration(g.uniform(2, 30) * float64(time.Minute))).UnixMilli()
	} else {
		p.Updated = t.Add(time.Duration(g.uniform(3, 72) * float64(time.Hour))).UnixMilli()
	}
	if !(n.net == "ak" && g.chance(0.7)) {
		nst := 5 + g.rng.IntN(56)
		p.Nst = &nst
	}
	if !((n.net == "ak" || n.net == "hv" || n.net == "uw") && g.chance(0.5)) {
		dmin := round(g.uniform(0.005, 0.3), 4)
		p.Dmin = &dmin
	}
	if g.chance(0.9) {
		gap := float64(25 + g.rng.IntN(236))
		p.Gap = &gap
	}
	if mag >= 2.5 && g.chance(0.3) {
		felt := 1 + g.rng.IntN(8)
		cdi := round(g.uniform(2, 3.1), 1)
		p.Felt, p.CDI = &felt, &cdi
		types = append(types, "dyfi")
	}
	g.finish(&p, types)
	return newFeature(p, lon, lat, depth, coordPrecision(n.net))
}

// global synthesizes an M4+ event of the world, reported by the NEIC.
func (g *catalogGen) global() feature {
	total := 0
	for _, z := range zones {
		total += z.weight
	}
	pick := g.rng.IntN(total)
	var z zone
	for _, z = range zones {
		if pick -= z.weight; pick < 0 {
			break
		}
	}
	var lat, lon float64
	var place string
	if z.remote != "" {
		lat, lon = g.near(z.center[0], z.center[1], z.spreadKm)
		place = z.remote
	} else {
		home := z.towns[g.rng.IntN(len(z.towns))]
		lat, lon = g.near(home.lat, home.lon, z.spreadKm)
		place = placeName(lat, lon, z.towns, z.region)
	}
	mag := round(g.magnitude(4.0, 7.0), 1)
	t := g.eventTime(mag)
	var depth float64
	switch {
	case g.chance(z.deep):
		depth = round(g.uniform(z.depth[0], z.depth[1]), 3)
	case g.chance(0.55):
		depth = 10 // the depth the NEIC fixes when it cannot resolve one
	default:
		depth = round(g.uniform(z.depth[0], min(z.depth[1], 70)), 3)
	}
	magType := "mb"
	switch {
	case mag >= 5.5:
		magType = "mww"
	case mag >= 5.0 && g.chance(0.5):
		magType = "mww"
	case mag < 4.5 && g.chance(0.1):
		magType = "mwr"
	}
	p := properties{
		Mag:     &mag,
		Place:   &place,
		Time:    t.UnixMilli(),
		Net:     "us",
		Code:    g.code("us", t),
		MagType: magType,
		Type:    "earthquake",
		RMS:     round(g.uniform(0.4, 1.3), 2),
		Status:  "reviewed",
	}
	if t.After(catalogEnd.Add(-24 * time.Hour)) {
		p.Status = "automatic"
	}
	p.Updated = t.Add(time.Duration(g.uniform(0.3, 48) * float64(time.Hour))).UnixMilli()
	types := []string{"origin", "phase-data"}
	if magType == "mww" {
		types = append(types, "moment-tensor")
	}
	if g.chance(0.9) {
		nst := 40 + g.rng.IntN(181)
		p.Nst = &nst
	}
	if g.chance(0.9) {
		dmin := round(g.uniform(0.3, 8), 3)
		p.Dmin = &dmin
	}
	gap := float64(15 + g.rng.IntN(146))
	p.Gap = &gap
	if z.remote == "" && mag >= 4.5 && g.chance(0.35) {
		felt := 1 + g.rng.IntN(40)
		cdi := round(g.uniform(2, 4.6), 1)
		p.Felt, p.CDI = &felt, &cdi
		types = append(types, "dyfi")
	}
	if mag >= 5.5 {
		mmi := round(g.uniform(3.2, 6.1), 3)
		green := "green"
		p.MMI, p.Alert = &mmi, &green
		types = append(types, "losspager", "shakemap")
		if z.remote != "" && mag >= 6.5 {
			p.Tsunami = 1
		}
	}
	g.finish(&p, types)
	return newFeature(p, lon, lat, depth, 4)
}

// finish fills what follows from the rest: links, ids, significance and
// title, and keeps the update before the catalog's end.
func (g *catalogGen) finish(p *properties, types []string) {
	id := p.Net + p.Code
	p.URL = "https://earthquake.usgs.gov/earthquakes/eventpage/" + id
	p.Detail = "https://earthquake.usgs.gov/fdsnws/event/1/query?eventid=" + id + "&format=geojson"
	p.IDs = "," + id + ","
	p.Sources = "," + p.Net + ","
	slices.Sort(types)
	p.Types = "," + strings.Join(types, ",") + ","
	if limit := catalogEnd.Add(-time.Minute).UnixMilli(); p.Updated > limit {
		p.Updated = limit
	}
	p.Sig = int(math.Round(*p.Mag * 100 * *p.Mag / 6.5))
	kind := ""
	if p.Type != "earthquake" {
		kind = " " + titleCase(p.Type)
	}
	p.Title = "M " + strconv.FormatFloat(*p.Mag, 'f', 1, 64) + kind + " - " + *p.Place
}

func newFeature(p properties, lon, lat, depth float64, decimals int) feature {
	return feature{
		Type:       "Feature",
		Properties: p,
		Geometry:   geometry{Type: "Point", Coordinates: [3]float64{round(lon, decimals), round(lat, decimals), depth}},
		ID:         p.Net + p.Code,
	}
}

// coordPrecision is how many decimals a network's coordinates carry: the
// Californian and Hawaiian networks locate in thousandths of a minute.
func coordPrecision(net string) int {
	switch net {
	case "ci", "nc", "hv":
		return 7
	}
	return 4
}

// Event codes go up with time, from where the published events put them.
var codeAnchors = map[string]struct {
	at     time.Time
	value  int
	perDay float64
	digits int // decimal digits; 0 for the letters of the Texan and Oklahoman networks
	prefix string
}{
	"us": {time.UnixMilli(1727378368811), 21555, 450, -1, "7000n"},
	"nc": {time.UnixMilli(1727647411120), 75061871, 120, 8, ""},
	"hv": {time.UnixMilli(1727645860220), 74452557, 60, 8, ""},
	"ci": {time.UnixMilli(1727644035770), 40742231, 100, 8, ""},
	"uw": {time.UnixMilli(1727630140080), 62049221, 25, 8, ""},
	"pr": {time.UnixMilli(1727638212850), 71463342, 25, 8, ""},
	"nn": {time.UnixMilli(1727630140080), 886120, 20, 8, ""},
	"uu": {time.UnixMilli(1727630140080), 60584120, 15, 8, ""},
	"mb": {time.UnixMilli(1727630140080), 80081220, 10, 8, ""},
	"tx": {time.UnixMilli(1727635506611), 5*676 + 9*26 + 16, 30, 0, "2024t"},
	"ok": {time.UnixMilli(1727632810304), 3*676 + 11*26 + 12, 10, 0, "2024t"},
}

// code is the event code a network would have given an event at t.
func (g *catalogGen) code(net string, t time.Time) string {
	if net == "ak" {
		for {
			const alnum = "0123456789abcdefghijklmnopqrstuvwxyz"
			b := []byte("024")
			for range 7 {
				b = append(b, alnum[g.rng.IntN(len(alnum))])
			}
			if code := string(b); !g.used[net+code] {
				g.used[net+code] = true
				return code
			}
		}
	}
	a := codeAnchors[net]
	v := a.value + int(t.Sub(a.at).Hours()/24*a.perDay)
	for {
		var code string
		switch a.digits {
		case -1:
			code = a.prefix + fmt.Sprintf("%03s", strconv.FormatInt(int64(v), 36))
		case 0:
			code = a.prefix + string([]byte{byte('a' + v/676%26), byte('a' + v/26%26), byte('a' + v%26)})
		default:
			code = a.prefix + fmt.Sprintf("%0*d", a.digits, v)
		}
		if !g.used[net+code] {
			g.used[net+code] = true
			return code
		}
		v++
	}
}

func titleCase(s string) string {
	words := strings.Fields(s)
	for i, w := range words {
		words[i] = strings.ToUpper(w[:1]) + w[1:]
	}
	return strings.Join(words, " ")
}

func round(v float64, decimals int) float64 {
	p := math.Pow(10, float64(decimals))
	return math.Round(v*p) / p
}

// placeName names a point as USGS does: distance and direction from the
// nearest town.
func placeName(lat, lon float64, towns []town, region string) string {
	t := nearest(lat, lon, towns)
	km := max(1, int(math.Round(distanceKm(lat, lon, t))))
	return fmt.Sprintf("%d km %s of %s, %s", km, compass(geo.Bearing(t.lat, t.lon, lat, lon)), t.name, region)
}

func nearest(lat, lon float64, towns []town) town {
	best := towns[0]
	for _, t := range towns[1:] {
		if distanceKm(lat, lon, t) < distanceKm(lat, lon, best) {
			best = t
		}
	}
	return best
}

func distanceKm(lat, lon float64, t town) float64 { return geo.DistanceKm(lat, lon, t.lat, t.lon) }

func compass(deg float64) string {
	points := [...]string{"N", "NNE", "NE", "ENE", "E", "ESE", "SE", "SSE", "S", "SSW", "SW", "WSW", "W", "WNW", "NW", "NNW"}
	return points[int(math.Round(deg/22.5))%16]
}
