package server

import (
	"errors"
	"fmt"
	"slices"

	"github.com/toolgate/toolgate/rules"
)

// ruleJSON is an entry of "rules" (contract section 29).
type ruleJSON struct {
	Name      *text   `json:"name"`
	When      *string `json:"when"`
	Effect    *string `json:"effect"`
	Message   *text   `json:"message"`
	Approvers []text  `json:"approvers"`
	Mode      *string `json:"mode"`
}

// rules checks "rules" and compiles them once, so that a rule that cannot
// work stops the start (or a reload) rather than failing open or closed
// on some call later. An ask rule's approvers must be among approvers.
func (p configParser) rules(path string, in []ruleJSON, approvers []Approver) ([]rules.Rule, error) {
	if in == nil {
		return nil, nil
	}
	out := make([]rules.Rule, len(in))
	for i, item := range in {
		out[i] = rules.Rule{Name: orEmpty(item.Name), When: orEmpty(item.When), Effect: rules.Effect(orEmpty(item.Effect)),
			Message: orEmpty(item.Message), Approvers: texts(item.Approvers), Mode: rules.Mode(orEmpty(item.Mode))}
	}
	if _, err := rules.Compile(out); err != nil {
		return nil, ruleError(path, err)
	}
	for i, r := range out {
		for j, a := range r.Approvers {
			if !slices.ContainsFunc(approvers, func(ap Approver) bool { return ap.ID == a }) {
				return nil, errorf(fmt.Sprintf("%s[%d].approvers[%d]", path, i, j), "rule %s: no approver %q is configured (approvers[].id)", r.Name, a)
			}
		}
	}
	return out, nil
}

// ruleError says a *rules.Error in the config's words: the path of the
// rule's field at fault, then the rule's name and the place in its when,
// so that the one line names both.
func ruleError(path string, err error) error {
	var re *rules.Error
	if !errors.As(err, &re) {
		return errorf(path, "%v", err)
	}
	msg := re.Msg
	switch {
	case re.Line > 1:
		msg = fmt.Sprintf("line %d, column %d: %s", re.Line, re.Column, msg)
	case re.Column > 0:
		msg = fmt.Sprintf("column %d: %s", re.Column, msg)
	}
	if re.Name != "" {
		msg = "rule " + re.Name + ": " + msg
	}
	return &ConfigError{Path: at(index(path, re.Index), re.Field), Msg: msg}
}

// orEmpty is *s, "" when absent.
func orEmpty[S ~string](s *S) string {
	if s == nil {
		return ""
	}
	return string(*s)
}
