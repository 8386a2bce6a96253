package toolgatetype_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/toolgate/toolgate/toolgatetype"
)

func TestIsCode(t *testing.T) {
	t.Parallel()
	quoteGone := toolgatetype.Errorf(toolgatetype.CodeQuoteNotFound, "no such quote")
	cases := []struct {
		name string
		err  error
		code toolgatetype.Code
		want bool
	}{
		{"the code", quoteGone, toolgatetype.CodeQuoteNotFound, true},
		{"another code", quoteGone, toolgatetype.CodeQuoteUsed, false},
		{"wrapped", fmt.Errorf("quote: %w", quoteGone), toolgatetype.CodeQuoteNotFound, true},
		{"untyped", errors.New("quote_not_found"), toolgatetype.CodeQuoteNotFound, false},
		{"nil", nil, toolgatetype.CodeQuoteNotFound, false},
		// An internal error is answered as internal, whatever its cause.
		{"internal, by its code", &toolgatetype.Error{Code: toolgatetype.CodeInternal, Err: quoteGone}, toolgatetype.CodeInternal, true},
		{"internal, by its cause's", &toolgatetype.Error{Code: toolgatetype.CodeInternal, Err: quoteGone}, toolgatetype.CodeQuoteNotFound, false},
	}
	for _, tc := range cases {
		if got := toolgatetype.IsCode(tc.err, tc.code); got != tc.want {
			t.Errorf("%s: IsCode(%v, %s) = %v, want %v", tc.name, tc.err, tc.code, got, tc.want)
		}
	}
}
