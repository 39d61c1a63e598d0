package service

import (
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/rackstream/rackstream/assignor/balancer"
)

// TestHostileMemberClaimsAreExported: the balancer's counts of members
// whose join metadata it could not trust are Prometheus counters, read at
// every scrape.
func TestHostileMemberClaimsAreExported(t *testing.T) {
	stats := &balancer.Stats{CheckpointsBeyondEnd: 2, InvalidEndpoints: 1, LastGenerationBytes: 4096}
	reg := prometheus.NewPedanticRegistry()
	if err := registerBalancerMetrics(reg, func() balancer.Stats { return *stats }); err != nil {
		t.Fatal(err)
	}
	want := func(beyond, invalid int) string {
		return `
# HELP rackstream_balancer_checkpoints_beyond_end_total Members whose join metadata claimed a store checkpoint beyond the changelog's end (their lag counted as unknown), counted while this instance led the group, once per member while it stays.
# TYPE rackstream_balancer_checkpoints_beyond_end_total counter
rackstream_balancer_checkpoints_beyond_end_total ` + itoa(beyond) + `
# HELP rackstream_balancer_invalid_endpoints_total Members whose announced endpoint was not host:port (left out of the placement: no query is forwarded to them), counted while this instance led the group, once per member while it stays.
# TYPE rackstream_balancer_invalid_endpoints_total counter
rackstream_balancer_invalid_endpoints_total ` + itoa(invalid) + `
`
	}
	names := []string{"rackstream_balancer_checkpoints_beyond_end_total", "rackstream_balancer_invalid_endpoints_total"}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want(2, 1)), names...); err != nil {
		t.Fatal(err)
	}
	stats.CheckpointsBeyondEnd, stats.InvalidEndpoints = 5, 3
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want(5, 3)), names...); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(newBalancerCollector(func() balancer.Stats { return *stats })); n != 8 {
		t.Errorf("%d series, want one per field of balancer.Stats (8)", n)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
