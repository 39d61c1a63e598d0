// Package promreg is the one way Rackstream's packages register their
// Prometheus collectors.
//
// Several instances may share one registry (tests, an embedding program):
// the second to register a collector gets the first one's, so that they
// share its series instead of failing. Anything else that makes a
// registration fail (a name registered with other labels or help, an
// invalid descriptor) is a programming error, and Register panics as
// prometheus.MustRegister does, rather than leaving a series silently
// unexported.
package promreg

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Register registers c on reg and returns it, or returns the collector of
// the same type already registered under c's descriptors.
func Register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	err := reg.Register(c)
	if err == nil {
		return c
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing
		}
	}
	panic(fmt.Sprintf("promreg: register %T: %v", c, err))
}
