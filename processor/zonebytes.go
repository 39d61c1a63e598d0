package processor

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/assignor"
)

// zoneCounter is the kgo hook behind assignor.ZoneBytes, installed on every Kafka
// client the runtime makes.
type zoneCounter struct {
	rack               string // "" when this instance has none
	read, write        atomic.Uint64
	unknownR, unknownW atomic.Uint64
}

var (
	_ kgo.HookBrokerRead  = (*zoneCounter)(nil)
	_ kgo.HookBrokerWrite = (*zoneCounter)(nil)
)

// OnBrokerRead implements kgo.HookBrokerRead.
func (z *zoneCounter) OnBrokerRead(meta kgo.BrokerMetadata, _ int16, n int, _, _ time.Duration, _ error) {
	z.count(meta, n, &z.read, &z.unknownR)
}

// OnBrokerWrite implements kgo.HookBrokerWrite.
func (z *zoneCounter) OnBrokerWrite(meta kgo.BrokerMetadata, _ int16, n int, _, _ time.Duration, _ error) {
	z.count(meta, n, &z.write, &z.unknownW)
}

func (z *zoneCounter) count(meta kgo.BrokerMetadata, n int, cross, unknown *atomic.Uint64) {
	if n <= 0 {
		return
	}
	switch {
	case z.rack == "" || meta.NodeID < 0 || meta.Rack == nil || *meta.Rack == "":
		unknown.Add(uint64(n))
	case *meta.Rack != z.rack:
		cross.Add(uint64(n))
	}
}

func (z *zoneCounter) bytes() assignor.ZoneBytes {
	return assignor.ZoneBytes{Read: z.read.Load(), Write: z.write.Load(), UnknownRead: z.unknownR.Load(), UnknownWrite: z.unknownW.Load()}
}

// CrossZoneBytes returns the bytes this instance's Kafka clients exchanged
// with brokers of other racks so far.
func (r *Runtime) CrossZoneBytes() assignor.ZoneBytes { return r.zones.bytes() }

// zoneCollector exports the counts at scrape time as
// rackstream_kafka_cross_zone_bytes_total{direction, zone}.
type zoneCollector struct {
	z    *zoneCounter
	desc *prometheus.Desc
}

const zoneHelp = "Bytes this instance's Kafka clients read from (direction=read) and wrote to (direction=write) brokers of another rack than its client.rack.tag tag's (zone=other), or of a rack not known: a seed connection, a broker without broker.rack, or an instance without a rack (zone=unknown)."

func newZoneCollector(z *zoneCounter) zoneCollector {
	return zoneCollector{z: z, desc: prometheus.NewDesc("rackstream_kafka_cross_zone_bytes_total", zoneHelp, []string{"direction", "zone"}, nil)}
}

func (c zoneCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c zoneCollector) Collect(ch chan<- prometheus.Metric) {
	b := c.z.bytes()
	for _, s := range [...]struct {
		dir, zone string
		v         uint64
	}{{"read", "other", b.Read}, {"write", "other", b.Write}, {"read", "unknown", b.UnknownRead}, {"write", "unknown", b.UnknownWrite}} {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(s.v), s.dir, s.zone)
	}
}
