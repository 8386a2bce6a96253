package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/toolgate/toolgate/storage"
)

func TestTranslate(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		in   error
		want error // matched with errors.Is; nil means the input comes back wrapped
	}{
		{"nil", nil, nil},
		{"no rows", pgx.ErrNoRows, storage.ErrNotFound},
		{"wrapped no rows", fmt.Errorf("scan: %w", pgx.ErrNoRows), storage.ErrNotFound},
		{"unique violation", &pgconn.PgError{Code: "23505", ConstraintName: "quotes_pkey"}, storage.ErrAlreadyExists},
		{"foreign key violation", &pgconn.PgError{Code: "23503"}, storage.ErrNotFound},
		{"other server error kept", &pgconn.PgError{Code: "40P01"}, nil},
		{"cancellation kept", fmt.Errorf("query: %w", context.Canceled), context.Canceled},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := translate(tc.in)
			switch {
			case tc.in == nil:
				if got != nil {
					t.Fatalf("translate(nil) = %v", got)
				}
			case tc.want == nil:
				if !errors.Is(got, tc.in) || !strings.HasPrefix(got.Error(), "postgres: ") {
					t.Fatalf("translate(%v) = %v, want it wrapped", tc.in, got)
				}
			case !errors.Is(got, tc.want):
				t.Fatalf("translate(%v) = %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}

func TestConfigDefaultsAndValidation(t *testing.T) {
	t.Parallel()
	var nilCfg *Config
	if got := nilCfg.WithDefaults().Schema; got != DefaultSchema {
		t.Errorf("nil config schema = %q, want %q", got, DefaultSchema)
	}
	in := &Config{Schema: "gw"}
	out := in.WithDefaults()
	out.Schema = "changed"
	if in.Schema != "gw" {
		t.Error("WithDefaults must copy, not modify, its receiver")
	}
	if err := (&Config{Schema: strings.Repeat("s", 64)}).WithDefaults().validate(); err == nil {
		t.Error("a 64-byte schema name would be truncated by the server and must be refused")
	}
	if err := (&Config{Schema: `odd "name"`}).WithDefaults().validate(); err != nil {
		t.Errorf("quoted identifiers allow any name: %v", err)
	}
}
