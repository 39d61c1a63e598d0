package kstreamsref

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
)

// GroupByScenario is a groupBy count: records keyed by their own key,
// re-keyed by their group through a repartition topic and counted per
// group, as Kafka Streams' stream.groupBy((key, group) -> group).count().
// The reference runs it whole in one driver, records in input order.
type GroupByScenario struct {
	Name string `json:"name"`
	// GroupBy marks the scenario's kind for the reference program: true.
	GroupBy bool          `json:"group_by"`
	Records []GroupRecord `json:"records"`
}

// GroupRecord is one input record: its key, its value (the group; nil for
// a tombstone, which no count takes), its timestamp.
type GroupRecord struct {
	Key       string  `json:"key"`
	Group     *string `json:"group"`
	Timestamp int64   `json:"timestamp"`
}

// GroupByResult is Kafka Streams' answer to a GroupByScenario: every
// record of the count's stream, in order, and the store at the end.
type GroupByResult struct {
	Name   string       `json:"name"`
	Error  string       `json:"error,omitempty"`
	Output []GroupCount `json:"output"`
	// Store holds each group's count, sorted by group, with the
	// timestamp the store keeps with it.
	Store []GroupCount `json:"store"`
}

// GroupCount is a group's count and the record timestamp Kafka gave it.
type GroupCount struct {
	Key       string `json:"key"`
	Value     int64  `json:"value"`
	Timestamp int64  `json:"timestamp"`
}

func (c GroupCount) String() string { return fmt.Sprintf("%s=%d@%d", c.Key, c.Value, c.Timestamp) }

// RunGroupBy sends a groupBy scenario and waits for Kafka Streams' result.
func (r *Reference) RunGroupBy(s GroupByScenario) (*GroupByResult, error) {
	s.GroupBy = true
	line, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("kstreamsref: encode scenario %s: %w", s.Name, err)
	}
	reply, err := r.jvm.Exchange(line)
	if err != nil {
		return nil, fmt.Errorf("kstreamsref: scenario %s: %w", s.Name, err)
	}
	var res GroupByResult
	if err := json.Unmarshal(reply, &res); err != nil {
		return nil, fmt.Errorf("kstreamsref: decode result of %s %.200q: %w", s.Name, reply, err)
	}
	if res.Error != "" {
		return nil, fmt.Errorf("kstreamsref: scenario %s: %s", s.Name, res.Error)
	}
	if res.Name != s.Name {
		return nil, fmt.Errorf("kstreamsref: result for %q, want %q", res.Name, s.Name)
	}
	return &res, nil
}

// GenerateGroupByScenarios returns n groupBy scenarios from seed: 20 to
// 120 records of up to 12 keys over 1 to 6 groups, a tenth of them
// tombstones, timestamps mostly rising with some out of order.
func GenerateGroupByScenarios(seed uint64, n int) []GroupByScenario {
	rng := rand.New(rand.NewPCG(seed, seed^0x67726f7570))
	out := make([]GroupByScenario, n)
	for i := range out {
		s := GroupByScenario{Name: fmt.Sprintf("g%03d", i), GroupBy: true}
		groups, keys := 1+rng.IntN(6), 1+rng.IntN(12)
		ts := rng.Int64N(1000)
		for range 20 + rng.IntN(101) {
			r := GroupRecord{Key: "k" + strconv.Itoa(rng.IntN(keys))}
			if rng.IntN(10) > 0 {
				g := "g" + strconv.Itoa(rng.IntN(groups))
				r.Group = &g
			}
			if rng.IntN(5) == 0 {
				r.Timestamp = max(0, ts-rng.Int64N(50)) // out of order
			} else {
				ts += rng.Int64N(20)
				r.Timestamp = ts
			}
			s.Records = append(s.Records, r)
		}
		out[i] = s
	}
	return out
}
