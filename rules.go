package toolgate

import (
	"fmt"

	"github.com/toolgate/toolgate/rules"
)

// SetRules compiles rs and puts them in force for the calls, quotes and
// listings that begin from then on; on an error (a *rules.Error) those in
// force stay. A server reloading its config calls it.
func (g *Gateway) SetRules(rs []rules.Rule) error {
	set, err := rules.Compile(rs)
	if err != nil {
		return fmt.Errorf("toolgate: %w", err)
	}
	g.rules.Store(set)
	return nil
}
