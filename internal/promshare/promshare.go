// Package promshare registers Prometheus collectors so that several
// instances of one component (gateways, limiters, upstream sets) can
// report to one registry: the first registers a metric, the others find
// it there and add to it, rather than failing as a second registration
// of the same name does.
package promshare

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Register registers c with reg and returns it, or, when reg already has a
// collector of the same description and of c's type, returns that one, so
// that both instances add to the same series. Any other failure (a metric
// of the same name with other labels or help, say) is appended to errs and
// c is returned unregistered: callers register all their collectors and
// then report the failures together.
func Register[C prometheus.Collector](reg prometheus.Registerer, c C, errs *[]error) C {
	err := reg.Register(c)
	var taken prometheus.AlreadyRegisteredError
	if errors.As(err, &taken) {
		if existing, ok := taken.ExistingCollector.(C); ok {
			return existing
		}
	}
	if err != nil {
		*errs = append(*errs, err)
	}
	return c
}
