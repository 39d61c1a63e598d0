package kstreamsref

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// WindowType names a kind of window as Kafka Streams defines it.
type WindowType string

// The four window types.
const (
	// Tumbling windows are [start, start+size), starts at multiples of size
	// since the epoch (TimeWindows.ofSizeAndGrace).
	Tumbling WindowType = "tumbling"
	// Hopping windows are [start, start+size), starts at multiples of
	// advance since the epoch (TimeWindows.advanceBy); a record falls in
	// every window that contains it.
	Hopping WindowType = "hopping"
	// Sliding windows are [start, start+time_difference], both ends
	// inclusive, created where records are (SlidingWindows).
	Sliding WindowType = "sliding"
	// Session windows are [first, last] record time of a run of records no
	// further apart than the gap; both ends inclusive (SessionWindows).
	Session WindowType = "session"
)

// WindowTypes lists the window types in a fixed order.
var WindowTypes = []WindowType{Tumbling, Hopping, Sliding, Session}

// Window is a scenario's window specification. Only the fields of its Type
// are used: SizeMs (tumbling, hopping), AdvanceMs (hopping),
// TimeDifferenceMs (sliding), GapMs (session).
type Window struct {
	Type             WindowType `json:"type"`
	SizeMs           int64      `json:"size_ms,omitempty"`
	AdvanceMs        int64      `json:"advance_ms,omitempty"`
	TimeDifferenceMs int64      `json:"time_difference_ms,omitempty"`
	GapMs            int64      `json:"gap_ms,omitempty"`
	GraceMs          int64      `json:"grace_ms"`
	// RetentionMs is the window store's retention; 0 leaves Kafka's
	// default (size + grace; 2 x time difference + grace for sliding; gap +
	// grace for session). Retention changes results, not only the store:
	// see the package documentation.
	RetentionMs int64 `json:"retention_ms,omitempty"`
}

// Aggregation is what a window holds.
type Aggregation string

// The aggregations.
const (
	// Count counts a window's records (count()).
	Count Aggregation = "count"
	// Sum adds the records' values (aggregate with initializer 0; sessions
	// merge by adding).
	Sum Aggregation = "sum"
)

// Emit is when a window's result is sent downstream.
type Emit string

// The emit strategies.
const (
	// Update emits on every change of a window (EmitStrategy.onWindowUpdate,
	// record cache off).
	Update Emit = "update"
	// Final emits a window once, when stream time passes its end plus grace
	// (EmitStrategy.onWindowClose).
	Final Emit = "final"
)

// Record is one input record. All of a key's records are in one partition.
type Record struct {
	Key       string `json:"key"`
	Value     int64  `json:"value"`
	Timestamp int64  `json:"timestamp"`
	Partition int32  `json:"partition"`
}

// Scenario is one windowed aggregation over an input topic of Partitions
// partitions. Records are in production order; each partition sees its own
// records in that order, as one task of Kafka Streams does.
type Scenario struct {
	Name        string      `json:"name"`
	Window      Window      `json:"window"`
	Aggregation Aggregation `json:"aggregation"`
	Emit        Emit        `json:"emit"`
	Partitions  int32       `json:"partitions"`
	// EmitIntervalMs is Kafka's emit-final throttle
	// (__emit.interval.ms.kstreams.windowed.aggregation__). The reference
	// sets 0 unless told otherwise; its wall clock never moves, so any
	// other value lets emit-final emit at most once per partition.
	EmitIntervalMs int64    `json:"emit_interval_ms,omitempty"`
	Records        []Record `json:"records"`
}

// PartitionRecords returns the records of partition p, in order.
func (s Scenario) PartitionRecords(p int32) []Record {
	var out []Record
	for _, r := range s.Records {
		if r.Partition == p {
			out = append(out, r)
		}
	}
	return out
}

// Result is Kafka Streams' answer to one scenario: one entry per
// partition, in partition order, or Error.
type Result struct {
	Name       string            `json:"name"`
	Error      string            `json:"error,omitempty"`
	Partitions []PartitionResult `json:"partitions"`
}

// PartitionResult is what one partition's task produced.
type PartitionResult struct {
	Partition int32 `json:"partition"`
	// Output is every record of the windowed table's stream, in the order
	// Kafka Streams forwarded them. Under Final, the windows one input
	// record closes come by start, then key (time windows), or by end,
	// start, then key (sessions).
	Output []Output `json:"output"`
	// Store is every window the store returns at the end, sorted by key,
	// start and end.
	Store []StoredWindow `json:"store"`
	// DroppedRecords is the task's dropped-records-total metric. Kafka
	// counts a record once per closed window it missed, so a late record
	// counts once per hopping window it belonged to.
	DroppedRecords int64 `json:"dropped_records"`
}

// Output is one output record: the windowed key (Kafka's Windowed<K>), the
// aggregate, and the record timestamp Kafka gave it.
type Output struct {
	Key   string `json:"key"`
	Start int64  `json:"start"`
	// End is exclusive for tumbling and hopping windows and inclusive for
	// sliding and session windows, as in Kafka's Window.end().
	End int64 `json:"end"`
	// Value is nil for a tombstone: a session that a merge removed.
	Value     *int64 `json:"value"`
	Timestamp int64  `json:"timestamp"`
}

// StoredWindow is one window in the store.
type StoredWindow struct {
	Key   string `json:"key"`
	Start int64  `json:"start"`
	End   int64  `json:"end"`
	Value int64  `json:"value"`
}

// WriteScenarios writes scenarios as JSON lines.
func WriteScenarios(w io.Writer, scenarios []Scenario) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	for _, s := range scenarios {
		if err := enc.Encode(s); err != nil {
			return fmt.Errorf("encode scenario %s: %w", s.Name, err)
		}
	}
	return bw.Flush()
}

// ReadScenarios reads JSON-line scenarios.
func ReadScenarios(r io.Reader) ([]Scenario, error) {
	var scenarios []Scenario
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 64<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var s Scenario
		if err := json.Unmarshal(line, &s); err != nil {
			return nil, fmt.Errorf("scenario line %d: %w", n, err)
		}
		scenarios = append(scenarios, s)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read scenarios: %w", err)
	}
	return scenarios, nil
}
