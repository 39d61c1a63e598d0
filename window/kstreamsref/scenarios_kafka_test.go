package kstreamsref

import (
	"reflect"
	"strings"
	"testing"
)

type windowKey struct {
	key        string
	start, end int64
}

// Kafka's results on the committed scenario list have the properties the
// differential comparison relies on, and the list exercises what it must:
// session merges, late records for every window type, final results.
// Running a scenario twice gives the same result.
func TestKafkasResultsOnTheScenarioList(t *testing.T) {
	runs := kafkaResults(t)
	scenarios, results := runs.list, runs.results

	tombstones, superseded := 0, 0
	dropped := map[WindowType]int64{}
	for i, s := range scenarios {
		res := results[i]
		emittedFinal := 0
		for _, pr := range res.Partitions {
			dropped[s.Window.Type] += pr.DroppedRecords
			store := map[windowKey]int64{}
			for _, w := range pr.Store {
				if !strings.HasPrefix(w.Key, ClosingKeyPrefix) {
					store[windowKey{w.Key, w.Start, w.End}] = w.Value
				}
			}
			emitted := map[windowKey]int64{}
			for _, o := range pr.Output {
				if !timestampInWindow(s.Window.Type, o) {
					t.Errorf("%s p%d: %v: timestamp outside its window", s.Name, pr.Partition, o)
				}
				k := windowKey{o.Key, o.Start, o.End}
				switch {
				case strings.HasPrefix(o.Key, ClosingKeyPrefix):
					if s.Emit == Final {
						t.Errorf("%s p%d: %v: the closing key's window was emitted final", s.Name, pr.Partition, o)
					}
				case o.Value == nil:
					tombstones++
					if s.Emit == Final || s.Window.Type != Session {
						t.Errorf("%s p%d: tombstone %v outside session emit-on-update", s.Name, pr.Partition, o)
					}
					delete(emitted, k)
				case s.Emit == Final && hasKey(emitted, k):
					t.Errorf("%s p%d: %v emitted final twice", s.Name, pr.Partition, o)
				default:
					emitted[k] = *o.Value
				}
			}
			emittedFinal += len(emitted)
			// The last update of each window, or the final results, are the
			// store; under emit-final a session may also have been emitted
			// before a late record merged it into a longer stored session.
			for k, v := range emitted {
				if sv, ok := store[k]; ok {
					if sv != v {
						t.Errorf("%s p%d: %v emitted with %d, stored with %d", s.Name, pr.Partition, k, v, sv)
					}
					continue
				}
				if s.Emit == Final && s.Window.Type == Session && withinStoredSession(store, k) {
					superseded++
					continue
				}
				t.Errorf("%s p%d: %v=%d emitted, not in the store", s.Name, pr.Partition, k, v)
			}
			for k, v := range store {
				if !hasKey(emitted, k) {
					t.Errorf("%s p%d: %v=%d stored, never emitted", s.Name, pr.Partition, k, v)
				}
			}
		}
		if s.Emit == Final && emittedFinal == 0 {
			t.Errorf("%s: no final result in any partition", s.Name)
		}
	}

	if tombstones == 0 || superseded == 0 {
		t.Errorf("%d session tombstones under emit-on-update, %d emitted-final sessions later merged: want both", tombstones, superseded)
	}
	for _, wt := range WindowTypes {
		if dropped[wt] == 0 {
			t.Errorf("no record dropped past grace in %s scenarios", wt)
		}
	}
	t.Logf("%d scenarios: %d session tombstones, %d final sessions merged later, dropped-records-total by window type %v",
		len(scenarios), tombstones, superseded, dropped)

	for i := range 8 {
		again, err := runs.ref.Run(scenarios[i])
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(again, results[i]) {
			t.Errorf("%s: a second run gave a different result", scenarios[i].Name)
		}
	}
}

// timestampInWindow reports whether an output record's timestamp is where
// Kafka puts it: the window's latest record time, inside the window (end
// exclusive for tumbling and hopping windows), or a session's end.
func timestampInWindow(wt WindowType, o Output) bool {
	switch wt {
	case Session:
		return o.Timestamp == o.End
	case Sliding:
		return o.Start <= o.Timestamp && o.Timestamp <= o.End
	default:
		return o.Start <= o.Timestamp && o.Timestamp < o.End
	}
}

func hasKey(m map[windowKey]int64, k windowKey) bool {
	_, ok := m[k]
	return ok
}

// withinStoredSession reports whether a stored session of k's key spans k.
func withinStoredSession(store map[windowKey]int64, k windowKey) bool {
	for s := range store {
		if s.key == k.key && s.start <= k.start && k.end <= s.end {
			return true
		}
	}
	return false
}
