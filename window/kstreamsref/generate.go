package kstreamsref

import (
	"fmt"
	"math/rand/v2"

	"github.com/rackstream/rackstream/partition"
)

// ScenarioSeed and ScenarioCount define the committed scenario list,
// testdata/scenarios.jsonl. Changing either, or the generator, changes the
// list; TestScenarioFileIsTheGeneratorsOutput fails until the file is
// regenerated (go test ./window/kstreamsref/ -run TestScenarioFile -regenerate),
// and the change shows in review. A scenario is never dropped for its result.
const (
	ScenarioSeed  = 35
	ScenarioCount = 160
)

// GenerateScenarios returns n scenarios drawn from seed. Window type, emit
// strategy and aggregation take turns, so every combination is equally
// represented. Each scenario has 1 to 4 partitions, 1 to 6 keys placed by
// Kafka's default partitioner (murmur2), and 12 to 80 records whose
// timestamps move forward with out-of-order ones within grace, late ones past
// grace, repeated timestamps, and records that bridge two sessions.
//
// Each partition's input ends with a closing record: a key of its own
// (starting with [ClosingKeyPrefix]), far enough in the future to close
// every window of the partition, so emit-final emits every window of the
// real keys while the closing key's own windows stay open. The store's retention keeps every window to the end, so the
// final store holds every window the input made.
func GenerateScenarios(seed uint64, n int) []Scenario {
	rng := rand.New(rand.NewPCG(seed, 0x6b73747265616d73)) // "kstreams"
	out := make([]Scenario, n)
	for i := range out {
		out[i] = generateScenario(rng, i)
	}
	return out
}

func generateScenario(rng *rand.Rand, i int) Scenario {
	s := Scenario{
		Name:        fmt.Sprintf("s%03d", i),
		Window:      Window{Type: WindowTypes[i%len(WindowTypes)]},
		Aggregation: []Aggregation{Count, Sum}[(i/len(WindowTypes))%2],
		Emit:        []Emit{Update, Final}[(i/(2*len(WindowTypes)))%2],
		Partitions:  int32(1 + rng.IntN(4)),
	}
	w := &s.Window
	w.GraceMs = []int64{0, 0, 3, 10, 40}[rng.IntN(5)]
	// extent is how far a record reaches in time: a window's length, or a
	// session's gap. step is the typical stream-time advance per record.
	var extent int64
	switch w.Type {
	case Tumbling:
		w.SizeMs = []int64{5, 10, 20, 50}[rng.IntN(4)]
		extent = w.SizeMs
	case Hopping:
		w.SizeMs = []int64{10, 20, 30}[rng.IntN(3)]
		// Advances that divide the size and ones that do not.
		w.AdvanceMs = []int64{w.SizeMs / 2, w.SizeMs / 5, 3, 7}[rng.IntN(4)]
		extent = w.SizeMs
	case Sliding:
		w.TimeDifferenceMs = []int64{3, 10, 25}[rng.IntN(3)]
		extent = w.TimeDifferenceMs
	case Session:
		w.GapMs = []int64{3, 8, 20}[rng.IntN(3)]
		extent = w.GapMs
	}
	step := max(1, extent/3)

	keys := make([]string, 1+rng.IntN(6))
	for k := range keys {
		keys[k] = fmt.Sprintf("k%d", k)
	}
	if rng.IntN(4) == 0 {
		keys[0] = "user/" + keys[0] // a key with a slash, as HTTP routes must allow
	}
	murmur := partition.Murmur2()
	place := func(key string) int32 { return murmur.Partition([]byte(key), s.Partitions) }

	// Stream time starts near 0 in some scenarios, where sliding windows
	// take Kafka's early-record path, and later in others.
	now := []int64{0, 1 + rng.Int64N(3*extent), 1000 + rng.Int64N(1000)}[rng.IntN(3)]
	last := map[string]int64{} // a key's latest timestamp, for session bridges
	records := 12 + rng.IntN(69)
	for range records {
		key := keys[rng.IntN(len(keys))]
		ts := now
		switch r := rng.IntN(20); {
		case r < 10: // in order
			now += rng.Int64N(step + 1)
			ts = now
		case r < 14: // out of order, mostly within grace
			ts = now - rng.Int64N(w.GraceMs+extent+1)
		case r < 16: // late: past grace, unless an open session reaches back to it
			ts = now - w.GraceMs - 2*extent - 1 - rng.Int64N(extent+1)
		case r < 17: // the same timestamp again
			if t, ok := last[key]; ok {
				ts = t
			}
		case r < 19: // a jump, which splits sessions
			now += extent + 1 + rng.Int64N(2*extent+1)
			ts = now
		default: // between this key's last record and now: bridges sessions
			if t, ok := last[key]; ok && t < now {
				ts = t + (now-t)/2
			}
		}
		ts = max(ts, 0)
		value := int64(1)
		if s.Aggregation == Sum {
			value = rng.Int64N(41) - 10
		}
		s.Records = append(s.Records, Record{Key: key, Value: value, Timestamp: ts, Partition: place(key)})
		last[key] = max(last[key], ts)
	}

	// The closing records: past every window's end plus grace (and gap), in
	// every partition, under keys of their own.
	var maxTS int64
	for _, r := range s.Records {
		maxTS = max(maxTS, r.Timestamp)
	}
	closing := maxTS + 2*(extent+w.GraceMs) + 1000
	for p := range s.Partitions {
		s.Records = append(s.Records, Record{Key: closingKey(place, p), Value: 1, Timestamp: closing, Partition: p})
	}
	// Windows start at 0 or later, and the store keeps those starting (or,
	// for sessions, ending) after stream time minus retention.
	w.RetentionMs = closing + 1
	return s
}

// ClosingKeyPrefix starts the keys of the closing records, and no other
// key of a generated scenario.
const ClosingKeyPrefix = "close-"

// closingKey returns the first key "close-p<p>-<n>" that place puts in
// partition p.
func closingKey(place func(string) int32, p int32) string {
	for n := 0; ; n++ {
		key := fmt.Sprintf("%sp%d-%d", ClosingKeyPrefix, p, n)
		if place(key) == p {
			return key
		}
	}
}
