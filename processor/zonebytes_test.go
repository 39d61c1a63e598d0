package processor

import (
	"math"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/assignor"
)

// TestZoneCounterCountsBytesByTheBrokersRack: bytes with a broker of
// another rack count as cross-zone, with one of our rack not at all, and
// with a seed connection, a broker without a rack, or from an instance
// without a rack as unknown.
func TestZoneCounterCountsBytesByTheBrokersRack(t *testing.T) {
	rack := func(r string) *string { return &r }
	seed := kgo.BrokerMetadata{NodeID: math.MinInt32, Host: "127.0.0.1", Port: 9092}
	same := kgo.BrokerMetadata{NodeID: 1, Rack: rack("a")}
	other := kgo.BrokerMetadata{NodeID: 2, Rack: rack("b")}
	rackless := kgo.BrokerMetadata{NodeID: 3}

	z := &zoneCounter{rack: "a"}
	z.OnBrokerWrite(same, 0, 100, 0, 0, nil)
	z.OnBrokerRead(same, 1, 1000, 0, 0, nil)
	z.OnBrokerWrite(other, 0, 30, 0, 0, nil)
	z.OnBrokerRead(other, 1, 300, 0, 0, nil)
	z.OnBrokerRead(other, 1, 0, 0, 0, nil) // a failed read
	z.OnBrokerWrite(seed, 3, 7, 0, 0, nil)
	z.OnBrokerRead(seed, 3, 70, 0, 0, nil)
	z.OnBrokerRead(rackless, 1, 5, 0, 0, nil)
	if got, want := z.bytes(), (assignor.ZoneBytes{Read: 300, Write: 30, UnknownRead: 75, UnknownWrite: 7}); got != want {
		t.Fatalf("bytes %+v; want %+v", got, want)
	}

	none := &zoneCounter{}
	none.OnBrokerRead(other, 1, 300, 0, 0, nil)
	if got := none.bytes(); got != (assignor.ZoneBytes{UnknownRead: 300}) {
		t.Fatalf("an instance without a rack: %+v; want every byte unknown", got)
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(newZoneCollector(z))
	want := `
# HELP rackstream_kafka_cross_zone_bytes_total ` + zoneHelp + `
# TYPE rackstream_kafka_cross_zone_bytes_total counter
rackstream_kafka_cross_zone_bytes_total{direction="read",zone="other"} 300
rackstream_kafka_cross_zone_bytes_total{direction="read",zone="unknown"} 75
rackstream_kafka_cross_zone_bytes_total{direction="write",zone="other"} 30
rackstream_kafka_cross_zone_bytes_total{direction="write",zone="unknown"} 7
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "rackstream_kafka_cross_zone_bytes_total"); err != nil {
		t.Fatal(err)
	}
}
