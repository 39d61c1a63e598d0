package kstreamsref

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
)

// JoinKind names a stream-stream join as Kafka Streams' KStream methods.
type JoinKind string

// The three joins.
const (
	Inner JoinKind = "inner" // KStream#join
	Left  JoinKind = "left"  // KStream#leftJoin
	Outer JoinKind = "outer" // KStream#outerJoin
)

// JoinKinds lists the joins in a fixed order.
var JoinKinds = []JoinKind{Inner, Left, Outer}

// JoinSpec is a join scenario's kind and JoinWindows: a left record at ts
// meets right records in [ts-BeforeMs, ts+AfterMs].
type JoinSpec struct {
	Kind     JoinKind `json:"kind"`
	BeforeMs int64    `json:"before_ms"`
	AfterMs  int64    `json:"after_ms"`
	GraceMs  int64    `json:"grace_ms"`
}

// JoinRecord is one input record of a join scenario, of side "left" or
// "right". All of a key's records are in one partition, on both sides.
type JoinRecord struct {
	Side      string `json:"side"`
	Key       string `json:"key"`
	Value     int64  `json:"value"`
	Timestamp int64  `json:"timestamp"`
	Partition int32  `json:"partition"`
}

// JoinScenario is one stream-stream join of two co-partitioned topics of
// Partitions partitions. Each partition's task sees its records in input
// order, whichever side they are on.
type JoinScenario struct {
	Name       string   `json:"name"`
	Join       JoinSpec `json:"join"`
	Partitions int32    `json:"partitions"`
	// EmitIntervalMs is Kafka's unmatched-record throttle
	// (__emit.interval.ms.kstreams.outer.join.spurious.results.fix__): 0
	// unless told otherwise.
	EmitIntervalMs int64        `json:"emit_interval_ms,omitempty"`
	Records        []JoinRecord `json:"records"`
}

// PartitionRecords returns the records of partition p, in order.
func (s JoinScenario) PartitionRecords(p int32) []JoinRecord {
	var out []JoinRecord
	for _, r := range s.Records {
		if r.Partition == p {
			out = append(out, r)
		}
	}
	return out
}

// JoinResult is Kafka Streams' answer to a join scenario, per partition.
type JoinResult struct {
	Name       string                `json:"name"`
	Error      string                `json:"error,omitempty"`
	Partitions []JoinPartitionResult `json:"partitions"`
}

// JoinPartitionResult is what one partition's task produced: every join
// result in order, and the task's dropped-records-total (records whose
// store write was skipped as expired).
type JoinPartitionResult struct {
	Partition      int32        `json:"partition"`
	Output         []JoinOutput `json:"output"`
	DroppedRecords int64        `json:"dropped_records"`
}

// JoinOutput is one join result: a pair, or (Left or Right nil) an
// unmatched record alone, with the record timestamp Kafka gave it.
type JoinOutput struct {
	Key       string `json:"key"`
	Left      *int64 `json:"left"`
	Right     *int64 `json:"right"`
	Timestamp int64  `json:"timestamp"`
}

func (o JoinOutput) String() string {
	side := func(v *int64) string {
		if v == nil {
			return "-"
		}
		return strconv.FormatInt(*v, 10)
	}
	return fmt.Sprintf("%s:%s|%s@%d", o.Key, side(o.Left), side(o.Right), o.Timestamp)
}

// RunJoin sends one join scenario and waits for Kafka Streams' result.
func (r *Reference) RunJoin(s JoinScenario) (*JoinResult, error) {
	res, err := exchange[JoinResult](r, s.Name, s)
	if err == nil && len(res.Partitions) != int(s.Partitions) {
		return nil, fmt.Errorf("kstreamsref: result for join %q with %d partitions, want %d", s.Name, len(res.Partitions), s.Partitions)
	}
	return res, err
}

// WriteJoinScenarios writes join scenarios as JSON lines.
func WriteJoinScenarios(w io.Writer, scenarios []JoinScenario) error { return writeLines(w, scenarios) }

// ReadJoinScenarios reads JSON-line join scenarios.
func ReadJoinScenarios(r io.Reader) ([]JoinScenario, error) { return readLines[JoinScenario](r) }

func writeLines[T any](w io.Writer, items []T) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	for i, it := range items {
		if err := enc.Encode(it); err != nil {
			return fmt.Errorf("encode line %d: %w", i+1, err)
		}
	}
	return bw.Flush()
}

func readLines[T any](r io.Reader) ([]T, error) {
	var out []T
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 64<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var it T
		if err := json.Unmarshal(line, &it); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		out = append(out, it)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read lines: %w", err)
	}
	return out, nil
}
