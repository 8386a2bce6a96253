package httpx

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolgate/toolgate/toolgatetype"
)

// Every field of toolgatetype.Error a caller can read survives WriteError and
// DecodeError, so a client gets what an embedded caller gets. A field added
// to toolgatetype.Error without its place on the wire fails this test.
func TestEveryErrorFieldSurvivesTheWire(t *testing.T) {
	t.Parallel()
	want := &toolgatetype.Error{Code: toolgatetype.CodeRateLimited}
	v := reflect.ValueOf(want).Elem()
	for i := 0; i < v.NumField(); i++ {
		switch name := v.Type().Field(i).Name; name {
		case "Code", "Err": // set above; never shown
		default:
			fill(t, v.Field(i), name)
		}
	}

	rec := httptest.NewRecorder()
	WriteError(rec, httptest.NewRequest(http.MethodPost, "/v1/tools/echo/call", nil), slog.New(slog.DiscardHandler), want)
	got, ok := toolgatetype.DecodeError(rec.Header(), rec.Body.Bytes())
	require.True(t, ok, "%s", rec.Body)
	assert.Equal(t, want, got)
}

// fill sets v to a value that is not its zero value.
func fill(t *testing.T, v reflect.Value, name string) {
	t.Helper()
	if v.Type() == reflect.TypeOf(time.Duration(0)) {
		v.SetInt(int64(7 * time.Second)) // the wire has whole seconds
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("value of " + name)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		v.SetInt(7)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(t, v.Elem(), name)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(t, v.Index(0), name)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				fill(t, v.Field(i), name+"."+v.Type().Field(i).Name)
			}
		}
	default:
		t.Fatalf("toolgatetype.Error.%s is a %s; teach this test to fill it", name, v.Kind())
	}
}

func TestDecodeError(t *testing.T) {
	t.Parallel()
	header := func(kv ...string) http.Header {
		h := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			h.Set(kv[i], kv[i+1])
		}
		return h
	}
	for _, tc := range []struct {
		name   string
		header http.Header
		body   string
		want   *toolgatetype.Error // nil: not the API's error shape
	}{
		{name: "a code this version does not know, with details it does not know",
			body: `{"error":{"code":"approval_unheard_of","message":"an approver has not decided yet","approvalPageTheme":"dark","manifestDigest":"sha256:ab"}}`,
			want: &toolgatetype.Error{Code: "approval_unheard_of", Message: "an approver has not decided yet", ManifestDigest: ptr("sha256:ab")}},
		{name: "where to ask for approval, when a grant is required",
			body: `{"error":{"code":"approval_required","message":"an approver must approve","approvalRequestsUrl":"https://gw.example/v1/approval-requests"}}`,
			want: &toolgatetype.Error{Code: toolgatetype.CodeApprovalRequired, Message: "an approver must approve", GrantRequired: true}},
		{name: "retry-after from the header alone",
			header: header("Retry-After", "3"),
			body:   `{"error":{"code":"rate_limited","message":"slow down"}}`,
			want:   &toolgatetype.Error{Code: toolgatetype.CodeRateLimited, Message: "slow down", RetryAfter: 3 * time.Second}},
		{name: "retryAfterSeconds wins over the header",
			header: header("Retry-After", "9"),
			body:   `{"error":{"code":"rate_limited","message":"slow down","retryAfterSeconds":2}}`,
			want:   &toolgatetype.Error{Code: toolgatetype.CodeRateLimited, Message: "slow down", RetryAfter: 2 * time.Second}},
		{name: "a proxy's JSON", body: `{"error":"bad gateway"}`},
		{name: "no code", body: `{"error":{"message":"what"}}`},
		{name: "a proxy's page", body: `<html><body>502 Bad Gateway</body></html>`},
		{name: "empty", body: ``},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := tc.header
			if h == nil {
				h = http.Header{}
			}
			got, ok := toolgatetype.DecodeError(h, []byte(tc.body))
			assert.Equal(t, tc.want != nil, ok)
			assert.Equal(t, tc.want, got)
		})
	}
}

func ptr[T any](v T) *T { return &v }
