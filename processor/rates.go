package processor

import (
	"maps"
	"sync"
	"sync/atomic"
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
// the network. Output records count for the task that emitted them when
// they land in its own partition number, as records keyed like the input
// do in an output co-partitioned with it; their sizes are scaled by the
// compression the output batches show. Records that land elsewhere spread
// by key over every rack's leaders whatever the placement, and are left
// out. It turns the counts into the byte rates a member reports in its
// join metadata (balancer.Settings.Rates).
type taskBytes struct {
	inputs, changelogs, outputs map[string]bool // read only
	now                         func() time.Time
	// emitted holds, per task, the bytes of its output records (key,
	// value and headers) that landed in its own partition number.
	emitted []atomic.Uint64

	mu             sync.Mutex
	input, clog    map[int32]uint64 // totals
	outZ, outRaw   uint64           // output batches' compressed and uncompressed bytes
	sinceIn        map[int32]uint64 // totals at the window's start
	sinceCl        map[int32]uint64
	sinceOut       []uint64
	sinceZ, sinceR uint64
	since          time.Time // the window's start; zero before the first call
	last           map[int32]balancer.TaskRate
	haveLastRates  bool
}

var (
	_ kgo.HookFetchBatchRead      = (*taskBytes)(nil)
	_ kgo.HookProduceBatchWritten = (*taskBytes)(nil)
)

func newTaskBytes(inputs, changelogs, outputs []string, tasks int32, now func() time.Time) *taskBytes {
	tb := &taskBytes{
		inputs: make(map[string]bool), changelogs: make(map[string]bool), outputs: make(map[string]bool), now: now,
		input: make(map[int32]uint64), clog: make(map[int32]uint64),
		emitted: make([]atomic.Uint64, tasks), sinceOut: make([]uint64, tasks),
	}
	for _, t := range inputs {
		tb.inputs[t] = true
	}
	for _, t := range changelogs {
		tb.changelogs[t] = true
	}
	for _, t := range outputs {
		tb.outputs[t] = true
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
	switch {
	case tb.changelogs[topic]:
		tb.add(tb.clog, partition, m.CompressedBytes)
	case tb.outputs[topic] && m.CompressedBytes > 0 && m.UncompressedBytes > 0:
		tb.mu.Lock()
		tb.outZ += uint64(m.CompressedBytes)
		tb.outRaw += uint64(m.UncompressedBytes)
		tb.mu.Unlock()
	}
}

// emit counts an output record task produced, once the broker has it
// (r.Partition is where it landed).
func (tb *taskBytes) emit(task int32, r *kgo.Record) {
	if r.Partition != task || task < 0 || int(task) >= len(tb.emitted) || !tb.outputs[r.Topic] {
		return
	}
	n := len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value)
	}
	tb.emitted[task].Add(uint64(n))
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
		tb.startWindow(now)
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
	per := func(total, start uint64) float64 { return float64(total-start) / elapsed.Seconds() }
	for t, n := range tb.input {
		r := out[t]
		r.Input = uint64(per(n, tb.sinceIn[t]))
		out[t] = r
	}
	for t, n := range tb.clog {
		r := out[t]
		r.Changelog = uint64(per(n, tb.sinceCl[t]))
		out[t] = r
	}
	ratio := 1.0 // the output batches' compression over the window
	if raw := tb.outRaw - tb.sinceR; raw > 0 {
		ratio = float64(tb.outZ-tb.sinceZ) / float64(raw)
	}
	for t := range tb.emitted {
		if n := tb.emitted[t].Load(); n > tb.sinceOut[t] {
			r := out[int32(t)]
			r.Output = uint64(per(n, tb.sinceOut[t]) * ratio)
			out[int32(t)] = r
		}
	}
	tb.startWindow(now)
	tb.last, tb.haveLastRates = out, true
	return out
}

// startWindow starts a window at now from the current totals.
func (tb *taskBytes) startWindow(now time.Time) {
	tb.since, tb.sinceIn, tb.sinceCl = now, maps.Clone(tb.input), maps.Clone(tb.clog)
	tb.sinceZ, tb.sinceR = tb.outZ, tb.outRaw
	for t := range tb.emitted {
		tb.sinceOut[t] = tb.emitted[t].Load()
	}
}
