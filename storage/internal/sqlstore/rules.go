package sqlstore

import (
	"encoding/json"
	"fmt"

	"github.com/toolgate/toolgate/storage"
)

// The rules that matched a call (storage.Begin.Rules) are a JSON column of
// its execution in both backends, written at admission and never changed:
// an array of {"name", "effect", "mode"} in the order admission gave them,
// NULL when no rule matched, so that the common call writes nothing.

// ruleUse is one element of an execution's rules column.
type ruleUse struct {
	Name   string `json:"name"`
	Effect string `json:"effect"`
	Mode   string `json:"mode"`
}

// RulesJSON encodes rules for an execution's rules column: nil (NULL)
// when there are none.
func RulesJSON(rules []storage.RuleUse) ([]byte, error) {
	if len(rules) == 0 {
		return nil, nil
	}
	col := make([]ruleUse, len(rules))
	for i, r := range rules {
		col[i] = ruleUse(r)
	}
	out, err := json.Marshal(col)
	if err != nil {
		return nil, fmt.Errorf("encode rules: %w", err)
	}
	return out, nil
}

// ParseRules decodes an execution's rules column; NULL is nil.
func ParseRules(col []byte) ([]storage.RuleUse, error) {
	if col == nil {
		return nil, nil
	}
	var rules []ruleUse
	if err := json.Unmarshal(col, &rules); err != nil {
		return nil, fmt.Errorf("stored rules are not readable: %w", err)
	}
	if len(rules) == 0 {
		return nil, nil
	}
	out := make([]storage.RuleUse, len(rules))
	for i, r := range rules {
		out[i] = storage.RuleUse(r)
	}
	return out, nil
}
