package tools

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/toolgate/toolgate/registry"
)

// Earthquake search defaults, sent explicitly so the upstream request says
// exactly what the caller was quoted for rather than relying on USGS's own
// defaults (which differ: no magnitude floor, up to 20000 events).
const (
	earthquakeDefaultLimit        = 10
	earthquakeDefaultOrderBy      = "time"
	earthquakeDefaultMinMagnitude = 4.0
)

const earthquakeProvider = "the USGS earthquake catalog"

const earthquakeInputSchema = `{
  "$schema": "http://json-schema.org/draft-07/schema#",
  "type": "object",
  "required": ["starttime"],
  "additionalProperties": false,
  "properties": {
    "starttime": {"type": "string", "format": "date", "description": "Earliest event date, YYYY-MM-DD (UTC)."},
    "endtime": {"type": "string", "format": "date", "description": "Latest event date, YYYY-MM-DD (UTC)."},
    "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 10, "description": "Maximum number of events."},
    "orderby": {"type": "string", "enum": ["time", "time-asc", "magnitude", "magnitude-asc"], "default": "time", "description": "time: newest first; magnitude: largest first."},
    "minmagnitude": {"type": "number", "minimum": -1, "maximum": 10, "default": 4, "description": "Smallest magnitude to include."}
  }
}`

const earthquakeOutputSchema = `{
  "$schema": "http://json-schema.org/draft-07/schema#",
  "type": "object",
  "required": ["type", "metadata", "features"],
  "additionalProperties": false,
  "properties": {
    "type": {"const": "FeatureCollection"},
    "metadata": {
      "type": "object",
      "required": ["count", "title", "status"],
      "additionalProperties": false,
      "properties": {
        "count": {"type": "integer", "minimum": 0, "description": "Number of features in this result."},
        "title": {"type": "string"},
        "status": {"type": "integer", "description": "HTTP status of the upstream answer."}
      }
    },
    "features": {
      "type": "array",
      "items": {
        "type": "object",
        "required": ["id", "geometry", "properties"],
        "additionalProperties": false,
        "properties": {
          "id": {"type": "string", "description": "Event identifier."},
          "geometry": {
            "type": "object",
            "required": ["type", "coordinates"],
            "additionalProperties": false,
            "properties": {
              "type": {"const": "Point"},
              "coordinates": {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 3, "description": "[longitude, latitude, depth in km]."}
            }
          },
          "properties": {
            "type": "object",
            "required": ["mag", "url", "time", "place"],
            "additionalProperties": false,
            "properties": {
              "mag": {"type": ["number", "null"], "description": "Magnitude; null when not yet determined."},
              "url": {"type": "string", "format": "uri", "description": "Link to the event page."},
              "time": {"type": "integer", "description": "Event time in milliseconds since the Unix epoch, UTC."},
              "place": {"type": ["string", "null"], "description": "Description of the place; null when unknown."}
            }
          }
        }
      }
    }
  }
}`

// EarthquakeSearch returns the earthquake-search tool: a search of the USGS
// earthquake catalog (FDSN event service) that returns a GeoJSON
// FeatureCollection. It is free, versioned and declared read-only.
func EarthquakeSearch() *registry.Tool {
	return &registry.Tool{
		Slug:        "earthquake-search",
		Name:        "Earthquake Search",
		Description: "Search an earthquake catalog; returns a GeoJSON FeatureCollection",
		Category:    "Data",
		Tags:        []string{"earthquakes", "seismology", "geojson", "usgs"},
		Provider: registry.Provider{
			Name:      "USGS Earthquake Hazards Program",
			TrustTier: "unverified",
		},
		Endpoint: registry.Endpoint{
			Origin: "https://earthquake.usgs.gov",
			Method: http.MethodGet,
			Path:   "/fdsnws/event/1/query",
		},
		Version:      1,
		Immutable:    true,
		Capabilities: readOnlyOpenWorld(),
		Pricing:      registry.Pricing{Type: registry.PricingFree, Amount: decimal.Zero, Currency: "USD"},
		InputSchema:  json.RawMessage(earthquakeInputSchema),
		OutputSchema: json.RawMessage(earthquakeOutputSchema),
		BuildRequest: buildEarthquakeRequest,
		Normalize:    normalizeEarthquakes,
		ExampleInput: json.RawMessage(`{"starttime":"2024-09-25","endtime":"2024-09-30","limit":2,"minmagnitude":5.4}`),
		ExampleOutput: json.RawMessage(`{"type":"FeatureCollection","metadata":{"count":1,"title":"USGS Earthquakes","status":200},` +
			`"features":[{"id":"us7000ngmr","geometry":{"type":"Point","coordinates":[65.9,-25.1,10]},` +
			`"properties":{"mag":6.3,"url":"https://earthquake.usgs.gov/earthquakes/eventpage/us7000ngmr","time":1727378368811,"place":"Mauritius - Reunion region"}}]}`),
		UpdatedAt: time.Date(2026, time.January, 12, 9, 0, 0, 0, time.UTC),
	}
}

func init() { registry.MustRegister(EarthquakeSearch()) }

type earthquakeInput struct {
	StartTime    string       `json:"starttime"`
	EndTime      string       `json:"endtime"`
	Limit        *wholeNumber `json:"limit"`
	OrderBy      string       `json:"orderby"`
	MinMagnitude *float64     `json:"minmagnitude"`
}

func buildEarthquakeRequest(ctx context.Context, origin string, input json.RawMessage) (*http.Request, error) {
	var in earthquakeInput
	if err := decodeInput("earthquake-search", input, &in); err != nil {
		return nil, err
	}
	if in.StartTime == "" {
		return nil, fmt.Errorf("earthquake-search: starttime is required")
	}
	limit := int64(earthquakeDefaultLimit)
	if in.Limit != nil {
		limit = int64(*in.Limit)
	}
	orderBy := in.OrderBy
	if orderBy == "" {
		orderBy = earthquakeDefaultOrderBy
	}
	minMag := earthquakeDefaultMinMagnitude
	if in.MinMagnitude != nil {
		minMag = *in.MinMagnitude
	}
	q := url.Values{}
	q.Set("format", "geojson")
	q.Set("starttime", in.StartTime)
	if in.EndTime != "" {
		q.Set("endtime", in.EndTime)
	}
	q.Set("limit", strconv.FormatInt(limit, 10))
	q.Set("orderby", orderBy)
	q.Set("minmagnitude", strconv.FormatFloat(minMag, 'f', -1, 64))
	return newGetRequest(ctx, origin, "/fdsnws/event/1/query", q)
}

// EarthquakeCollection is the normalized output of earthquake-search: a
// GeoJSON FeatureCollection reduced to the declared fields.
type EarthquakeCollection struct {
	Type     string              `json:"type"` // always "FeatureCollection"
	Metadata EarthquakeMetadata  `json:"metadata"`
	Features []EarthquakeFeature `json:"features"`
}

// EarthquakeMetadata describes a search result.
type EarthquakeMetadata struct {
	// Count is the number of features in this result, counted by the tool:
	// the provider's own count is not trusted to agree with what it sent.
	Count int    `json:"count"`
	Title string `json:"title"`
	// Status is the HTTP status the provider answered with, as observed by
	// the gateway rather than as claimed in the body.
	Status int `json:"status"`
}

// EarthquakeFeature is one event.
type EarthquakeFeature struct {
	ID         string               `json:"id"`
	Geometry   EarthquakeGeometry   `json:"geometry"`
	Properties EarthquakeProperties `json:"properties"`
}

// EarthquakeGeometry is a GeoJSON Point.
type EarthquakeGeometry struct {
	Type string `json:"type"` // always "Point"
	// Coordinates are [longitude, latitude, depth in km].
	Coordinates []float64 `json:"coordinates"`
}

// EarthquakeProperties are an event's declared properties.
type EarthquakeProperties struct {
	Mag *float64 `json:"mag"` // nil when the catalog has no magnitude yet
	URL string   `json:"url"`
	// Time is milliseconds since the Unix epoch, UTC.
	Time  int64   `json:"time"`
	Place *string `json:"place"` // nil when the catalog has no place name
}

// The usgs* types hold only the fields the tool declares: decoding into
// them is the projection that drops everything else USGS sends.
type usgsCollection struct {
	Type     *string       `json:"type"`
	Metadata *usgsMetadata `json:"metadata"`
	Features []usgsFeature `json:"features"`
}

type usgsMetadata struct {
	Title *string `json:"title"`
}

type usgsFeature struct {
	ID         *string         `json:"id"`
	Geometry   *usgsGeometry   `json:"geometry"`
	Properties *usgsProperties `json:"properties"`
}

type usgsGeometry struct {
	Type        *string   `json:"type"`
	Coordinates []float64 `json:"coordinates"`
}

type usgsProperties struct {
	Mag   *float64     `json:"mag"`
	URL   *string      `json:"url"`
	Time  *wholeNumber `json:"time"`
	Place *string      `json:"place"`
}

func normalizeEarthquakes(resp registry.UpstreamResponse) (any, error) {
	switch {
	case resp.StatusCode == http.StatusNoContent:
		// FDSN services answer 204 for "no events matched" when asked to;
		// that is an empty result, not a failure.
		return EarthquakeCollection{
			Type:     "FeatureCollection",
			Metadata: EarthquakeMetadata{Count: 0, Title: "USGS Earthquakes", Status: resp.StatusCode},
			Features: []EarthquakeFeature{},
		}, nil
	case !success(resp.StatusCode):
		return nil, upstreamFailed(earthquakeProvider, resp.StatusCode, usgsReason(resp.Body))
	}
	raw, ok := scanUSGSCollection(resp.Body)
	if !ok {
		// The scanner declined: encoding/json decides, with the errors and
		// edge cases it always had.
		if err := decodeBody(earthquakeProvider, resp.Body, &raw); err != nil {
			return nil, err
		}
	}
	return earthquakesFrom(raw, resp.StatusCode)
}

// earthquakesFrom checks a decoded answer has the declared shape and maps
// it to the tool's output.
func earthquakesFrom(raw usgsCollection, status int) (any, error) {
	if raw.Type == nil || *raw.Type != "FeatureCollection" {
		return nil, invalid(earthquakeProvider, "not a GeoJSON FeatureCollection")
	}
	if raw.Features == nil {
		return nil, invalid(earthquakeProvider, "features is missing")
	}
	out := EarthquakeCollection{
		Type:     "FeatureCollection",
		Metadata: EarthquakeMetadata{Count: len(raw.Features), Status: status},
		Features: make([]EarthquakeFeature, len(raw.Features)),
	}
	if raw.Metadata != nil && raw.Metadata.Title != nil {
		out.Metadata.Title = *raw.Metadata.Title
	}
	for i, f := range raw.Features {
		switch {
		case f.ID == nil:
			return nil, invalid(earthquakeProvider, "feature %d has no id", i)
		case f.Geometry == nil || f.Geometry.Type == nil || *f.Geometry.Type != "Point" || f.Geometry.Coordinates == nil:
			return nil, invalid(earthquakeProvider, "feature %d has no Point geometry", i)
		case f.Properties == nil || f.Properties.URL == nil || f.Properties.Time == nil:
			return nil, invalid(earthquakeProvider, "feature %d lacks its url or time", i)
		}
		out.Features[i] = EarthquakeFeature{
			ID:       *f.ID,
			Geometry: EarthquakeGeometry{Type: "Point", Coordinates: f.Geometry.Coordinates},
			Properties: EarthquakeProperties{
				Mag:   f.Properties.Mag,
				URL:   *f.Properties.URL,
				Time:  int64(*f.Properties.Time),
				Place: f.Properties.Place,
			},
		}
	}
	return out, nil
}

// usgsReason picks the explanation out of a USGS text/plain error page,
// which reads "Error 400: Bad Request", a blank line, the reason, then
// usage, request and version details that are of no use to a caller.
// Anything else (a proxy's page) is returned whole for Excerpt to cut.
func usgsReason(body []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "Error ") {
			continue
		}
		return line
	}
	return string(body)
}
