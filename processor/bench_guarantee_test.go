package processor_test

import (
	"testing"
	"time"

	"github.com/rackstream/rackstream/harness/kafkatest"
	"github.com/rackstream/rackstream/processor"
)

// BenchmarkProcessingGuarantees runs the count of BenchmarkProcessingCount
// under each processing guarantee, side by side on one input: the cost
// of exactly-once (a transaction per commit interval, 100 ms by default)
// and of at-most-once (an offset commit before every batch) against
// at-least-once at the same commit interval and at its own 1 s.
//
//	RACKSTREAM_BENCH_RECORDS=200000 go test -run '^$' -bench 'ProcessingGuarantees' -benchtime 1x -timeout 30m ./processor/
func BenchmarkProcessingGuarantees(b *testing.B) {
	c := kafkatest.New(b)
	records := benchRecords()
	input := benchInput(b, c, records)
	for _, mode := range []struct {
		name      string
		guarantee processor.Guarantee
		interval  time.Duration
	}{
		{"at_least_once-1s", processor.AtLeastOnce, time.Second},
		{"at_least_once-100ms", processor.AtLeastOnce, 100 * time.Millisecond},
		{"exactly_once_v2-100ms", processor.ExactlyOnceV2, processor.DefaultCommitIntervalExactlyOnce},
		{"at_most_once-1s", processor.AtMostOnce, time.Second},
	} {
		b.Run(mode.name, func(b *testing.B) {
			benchCount(b, c, input, records, true, func(o *processor.Options) {
				o.Guarantee, o.CommitInterval = mode.guarantee, mode.interval
			})
		})
	}
}
