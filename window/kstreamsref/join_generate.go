package kstreamsref

import (
	"fmt"
	"math/rand/v2"

	"github.com/rackstream/rackstream/partition"
)

// JoinScenarioSeed and JoinScenarioCount define the committed join
// scenario list, testdata/join_scenarios.jsonl, pinned to the generator as
// the windowed list is (TestJoinScenarioFileIsTheGeneratorsOutput).
const (
	JoinScenarioSeed  = 37
	JoinScenarioCount = 120
)

// GenerateJoinScenarios returns n join scenarios drawn from seed. The join
// kind takes turns; windows are symmetric or not, with or without grace;
// each scenario has 1 to 3 partitions, 1 to 5 keys placed by murmur2 on
// both topics, and 10 to 70 records on either side whose timestamps move
// forward, with out-of-order ones within the window and grace, late ones
// past it, records far behind stream time, and repeated timestamps.
//
// Each partition's input ends with a closing record: a left record of a
// key of its own (starting with [ClosingKeyPrefix]), far enough ahead to
// close every window of the partition, so that left and outer joins emit
// every unmatched record of the real keys.
func GenerateJoinScenarios(seed uint64, n int) []JoinScenario {
	rng := rand.New(rand.NewPCG(seed, 0x6a6f696e73)) // "joins"
	out := make([]JoinScenario, n)
	for i := range out {
		out[i] = generateJoinScenario(rng, i)
	}
	return out
}

func generateJoinScenario(rng *rand.Rand, i int) JoinScenario {
	s := JoinScenario{
		Name:       fmt.Sprintf("j%03d", i),
		Join:       JoinSpec{Kind: JoinKinds[i%len(JoinKinds)]},
		Partitions: int32(1 + rng.IntN(3)),
	}
	j := &s.Join
	j.BeforeMs = []int64{0, 2, 5, 10, 20}[rng.IntN(5)]
	j.AfterMs = j.BeforeMs
	if rng.IntN(3) == 0 {
		j.AfterMs = []int64{0, 1, 7, 15}[rng.IntN(4)]
	}
	j.GraceMs = []int64{0, 0, 3, 10, 30}[rng.IntN(5)]
	extent := max(1, j.BeforeMs, j.AfterMs)
	step := max(1, extent/2)

	keys := make([]string, 1+rng.IntN(5))
	for k := range keys {
		keys[k] = fmt.Sprintf("k%d", k)
	}
	murmur := partition.Murmur2()
	place := func(key string) int32 { return murmur.Partition([]byte(key), s.Partitions) }

	now := []int64{0, 1 + rng.Int64N(3*extent), 1000 + rng.Int64N(1000)}[rng.IntN(3)]
	last := map[string]int64{}
	for range 10 + rng.IntN(61) {
		key := keys[rng.IntN(len(keys))]
		ts := now
		switch r := rng.IntN(20); {
		case r < 10: // in order
			now += rng.Int64N(step + 1)
			ts = now
		case r < 14: // out of order, within the window and grace
			ts = now - rng.Int64N(extent+j.GraceMs+1)
		case r < 16: // late: past the window and grace
			ts = now - extent - j.GraceMs - 1 - rng.Int64N(2*extent+1)
		case r < 17: // this key's last timestamp again
			if t, ok := last[key]; ok {
				ts = t
			}
		case r < 19: // a jump that closes windows
			now += extent + j.GraceMs + 1 + rng.Int64N(2*extent+1)
			ts = now
		default: // far behind: past retention
			ts = now - 2*(j.BeforeMs+j.AfterMs+j.GraceMs) - 1 - rng.Int64N(extent+1)
		}
		ts = max(ts, 0)
		side := []string{"left", "right"}[rng.IntN(2)]
		s.Records = append(s.Records, JoinRecord{Side: side, Key: key, Value: rng.Int64N(100), Timestamp: ts, Partition: place(key)})
		last[key] = max(last[key], ts)
	}
	var maxTS int64
	for _, r := range s.Records {
		maxTS = max(maxTS, r.Timestamp)
	}
	closing := maxTS + j.BeforeMs + j.AfterMs + 2*j.GraceMs + 1000
	for p := range s.Partitions {
		s.Records = append(s.Records, JoinRecord{Side: "left", Key: closingKey(place, p), Value: -1, Timestamp: closing, Partition: p})
	}
	return s
}
