package query

import (
	"net/url"
	"strings"
	"testing"
)

// TestErrorsEchoLongInputsShortened: an error names the input at fault, but
// a 15 KB store name, parameter or value is shortened in it, not echoed
// whole.
func TestErrorsEchoLongInputsShortened(t *testing.T) {
	c := newCluster(t, clusterOpts{members: 1})
	n := c.nodes[0]
	long := strings.Repeat("s", 15<<10)
	for _, path := range []string{
		"/v1/stores/" + long + "/keys/a",
		"/v1/stores/" + long + "/scan",
		"/v1/stores/" + long + "%20/keys/a",
		"/v1/stores/counts/keys/a?" + long + "=1",
		"/v1/stores/counts/keys/a?max_lag=" + long,
		"/v1/stores/counts/keys/a?min_position=" + long,
		"/v1/stores/counts/keys/a?key_encoding=" + long,
		"/v1/stores/counts/scan?limit=" + long,
		"/v1/stores/counts/scan?cursor=" + long,
		"/v1/stores/counts/scan?tasks=" + long,
		"/v1/stores/counts/scan?tasks=~" + long,
		"/v1/metadata?" + url.QueryEscape(long) + "=1",
	} {
		a := c.get(n, path)
		if a.code < 400 || a.code >= 500 {
			t.Errorf("GET %.60s...: %d, want a 4xx", path, a.code)
		}
		if msg := a.errMsg(); len(msg) > 1<<10 {
			t.Errorf("GET %.60s...: the error message is %d bytes: %.120s", path, len(msg), msg)
		}
	}
}
