package kstreamsref

import (
	"fmt"

	"github.com/rackstream/rackstream/window"
)

// RunJoinCore runs a join scenario through Rackstream's pure core,
// window.StreamJoin over a window.MemJoin, and answers in the reference's
// [JoinResult] shape. Each partition is a task with its own join state and
// stores, its records in input order, each record's Seq its position in
// the partition. DroppedRecords counts the records whose own store write
// was skipped as expired (window.JoinResult.Expired), as Kafka's
// dropped-records-total does. EmitIntervalMs is ignored: Rackstream has no
// throttle.
func RunJoinCore(s JoinScenario) (*JoinResult, error) {
	var kind window.JoinKind
	switch s.Join.Kind {
	case Inner:
		kind = window.InnerJoin
	case Left:
		kind = window.LeftJoin
	case Outer:
		kind = window.OuterJoin
	default:
		return nil, fmt.Errorf("core: join scenario %s: kind %q", s.Name, s.Join.Kind)
	}
	w := window.JoinWindows{Before: s.Join.BeforeMs, After: s.Join.AfterMs, Grace: s.Join.GraceMs}
	if err := w.Validate(); err != nil {
		return nil, fmt.Errorf("core: join scenario %s: %w", s.Name, err)
	}
	j := window.StreamJoin[int64]{Windows: w, Kind: kind}
	res := &JoinResult{Name: s.Name, Partitions: make([]JoinPartitionResult, s.Partitions)}
	for p := range s.Partitions {
		var store window.MemJoin[int64]
		st := window.NewJoinState()
		pr := JoinPartitionResult{Partition: p, Output: []JoinOutput{}}
		for i, r := range s.PartitionRecords(p) {
			side := window.Left
			if r.Side == "right" {
				side = window.Right
			}
			out, err := j.Process(st, &store, window.Buffered[int64]{Side: side, Key: []byte(r.Key), Timestamp: r.Timestamp, Seq: int64(i), Value: r.Value})
			if err != nil {
				return nil, fmt.Errorf("core: join scenario %s partition %d record %d: %w", s.Name, p, i, err)
			}
			if err := store.Apply(out.Ops); err != nil {
				return nil, err
			}
			st = out.State
			if out.Expired {
				pr.DroppedRecords++
			}
			for _, op := range out.Ops {
				if op.Kind != window.JoinEmit {
					continue
				}
				o := JoinOutput{Key: string(op.Key), Timestamp: op.Timestamp}
				if op.HasLeft {
					o.Left = &op.Left
				}
				if op.HasRight {
					o.Right = &op.Right
				}
				pr.Output = append(pr.Output, o)
			}
		}
		res.Partitions[p] = pr
	}
	return res, nil
}
