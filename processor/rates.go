package processor

import (
	"maps"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/assignor/balancer"
)

// minRateWindow is the shortest window a rate is measured over: two joins
// closer than this report the rates of the previous window again.
const minRateWindow = 10 * time.Second

// taskBytes counts the bytes the group client moves for each task, as kgo
// reports its batches: fetched from input and table partitions, produced to
// changelog partitions (partition i is task i), compressed, as they cross
// the network. It turns them into the byte rates a member reports in its
// join metadata (balancer.Settings.Rates). Output records go to their
// key's partition, not their task's, and are not counted.
type taskBytes struct {
	inputs, changelogs map[string]bool // read only
	now                func() time.Time

	mu            sync.Mutex
	input, clog   map[int32]uint64 // totals
	sinceIn       map[int32]uint64 // totals at the window's start
	sinceCl       map[int32]uint64
	since         time.Time // the window's start; zero before the first call
	last          map[int32]balancer.TaskRate
	haveLastRates bool
}

var (
	_ kgo.HookFetchBatchRead      = (*taskBytes)(nil)
	_ kgo.HookProduceBatchWritten = (*taskBytes)(nil)
)

func newTaskBytes(inputs, changelogs []string, now func() time.Time) *taskBytes {
	tb := &taskBytes{
		inputs: make(map[string]bool), changelogs: make(map[string]bool), now: now,
		input: make(map[int32]uint64), clog: make(map[int32]uint64),
	}
	for _, t := range inputs {
		tb.inputs[t] = true
	}
	for _, t := range changelogs {
		tb.changelogs[t] = true
	}
	return tb
}

// OnFetchBatchRead implements kgo.HookFetchBatchRead.
func (tb *taskBytes) OnFetchBatchRead(_ kgo.BrokerMetadata, topic string, partition int32, m kgo.FetchBatchMetrics) {
	if tb.inputs[topic] {
		tb.add(tb.input, partition, m.CompressedBytes)
	}
}

// OnProduceBatchWritten implements kgo.HookProduceBatchWritten.
func (tb *taskBytes) OnProduceBatchWritten(_ kgo.BrokerMetadata, topic string, partition int32, m kgo.ProduceBatchMetrics) {
	if tb.changelogs[topic] {
		tb.add(tb.clog, partition, m.CompressedBytes)
	}
}

func (tb *taskBytes) add(into map[int32]uint64, task int32, n int) {
	if n <= 0 {
		return
	}
	tb.mu.Lock()
	into[task] += uint64(n)
	tb.mu.Unlock()
}

// rates returns each task's byte rates over the window since the previous
// call, or the previous call's rates when that was less than
// minRateWindow ago (nil before any window has closed). The balancer keeps
// only the tasks the member runs active.
func (tb *taskBytes) rates() map[int32]balancer.TaskRate {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	now := tb.now()
	if tb.since.IsZero() {
		tb.since, tb.sinceIn, tb.sinceCl = now, maps.Clone(tb.input), maps.Clone(tb.clog)
		return nil
	}
	elapsed := now.Sub(tb.since)
	if elapsed < minRateWindow {
		if !tb.haveLastRates {
			return nil
		}
		return tb.last
	}
	out := make(map[int32]balancer.TaskRate)
	per := func(total, start uint64) uint64 { return uint64(float64(total-start) / elapsed.Seconds()) }
	for t, n := range tb.input {
		r := out[t]
		r.Input = per(n, tb.sinceIn[t])
		out[t] = r
	}
	for t, n := range tb.clog {
		r := out[t]
		r.Changelog = per(n, tb.sinceCl[t])
		out[t] = r
	}
	tb.since, tb.sinceIn, tb.sinceCl = now, maps.Clone(tb.input), maps.Clone(tb.clog)
	tb.last, tb.haveLastRates = out, true
	return out
}
