package kafkaref

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/rackstream/rackstream/assignor"
)

// Scenario is a placement input in the assignor's JSON shape (the Assignor
// issue's input), with a name. Actives are fixed: every task is in exactly
// one client's previous_active, where its state is caught up (lag 0), and no
// other client holds state, so the assignor keeps every active where it is
// and both sides place standbys around the same actives.
type Scenario struct {
	Name                    string   `json:"name"`
	Tasks                   int      `json:"tasks"`
	NumStandbyReplicas      int      `json:"num_standby_replicas"`
	RackAwareAssignmentTags []string `json:"rack_aware_assignment_tags"`
	Clients                 []Client `json:"clients"`
	// RackAwareness, in the rack-aware scenarios only, gives the partitions'
	// racks and the strategy (see GenerateRackScenarios).
	RackAwareness *assignor.RackAwareness `json:"rack_awareness,omitempty"`
}

// Client is one instance of a [Scenario].
type Client struct {
	ID             string            `json:"id"`
	Tags           map[string]string `json:"tags"`
	Capacity       int               `json:"capacity"`
	PreviousActive []int             `json:"previous_active,omitempty"`
	Lags           map[string]int64  `json:"lags,omitempty"`
}

// ScenarioSeed and ScenarioCount define the committed scenario list,
// testdata/scenarios.jsonl. Changing either, or the generator, changes the
// list; TestScenarioFileIsTheGeneratorsOutput fails until the file is
// regenerated (go test ./assignor/kafkaref/ -run TestScenarioFile -regenerate),
// and the change shows in review. A scenario is never dropped for its result.
const (
	ScenarioSeed  = 708
	ScenarioCount = 300
)

// tagKeys are the dimensions a scenario draws from, in no particular order:
// each scenario picks its own priority order.
var tagKeys = []string{"zone", "cluster", "region", "rack"}

// GenerateScenarios returns n scenarios drawn from seed: 1 to 4 configured tag
// dimensions (sometimes with an extra tag that is not configured), 2 to 60
// clients over unevenly weighted values (some keys single-valued, some
// derived from another key, as a region is from its zone), 1 to 3 standbys,
// capacities mostly 1, and actives placed round-robin, at random, or all in
// one value of the first key.
func GenerateScenarios(seed uint64, n int) []Scenario {
	rng := rand.New(rand.NewPCG(seed, 0x6b61666b61726566)) // "kafkaref"
	out := make([]Scenario, n)
	for i := range out {
		out[i] = generateScenario(rng, fmt.Sprintf("s%03d", i))
	}
	return out
}

func generateScenario(rng *rand.Rand, name string) Scenario {
	s := Scenario{Name: name}
	dims := 1 + rng.IntN(4)
	keys := slices.Clone(tagKeys)
	rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	s.RackAwareAssignmentTags = keys[:dims]
	var unlisted string
	if dims < len(keys) && rng.IntN(5) == 0 {
		unlisted = keys[dims] // configured on clients, not in rack.aware.assignment.tags
	}

	// Client counts: mostly small groups, where tags are scarce, with a tail
	// up to 60.
	var clients int
	switch r := rng.IntN(10); {
	case r < 5:
		clients = 2 + rng.IntN(11) // 2..12
	case r < 8:
		clients = 13 + rng.IntN(18) // 13..30
	default:
		clients = 31 + rng.IntN(30) // 31..60
	}
	s.NumStandbyReplicas = 1 + rng.IntN(3)
	s.Tasks = 1 + rng.IntN(48)

	// Each key gets 1..6 values with uneven weights; a key after the first
	// may instead be derived from the first (value = parent's value / k).
	type dimension struct {
		key     string
		values  []string
		weights []float64
		parent  int // index of the key it is derived from, or -1
		fold    int
	}
	all := s.RackAwareAssignmentTags
	if unlisted != "" {
		all = append(slices.Clone(all), unlisted)
	}
	ds := make([]dimension, len(all))
	for d, key := range all {
		nv := 1 + rng.IntN(6)
		if rng.IntN(8) == 0 {
			nv = 1 // a key with a single value
		}
		dim := dimension{key: key, parent: -1}
		if d > 0 && rng.IntN(4) == 0 && len(ds[0].values) > 1 {
			dim.parent, dim.fold = 0, 2+rng.IntN(2)
		}
		for v := range nv {
			dim.values = append(dim.values, fmt.Sprintf("%s-%c", key, 'a'+v))
			// Weights 1, 1/2, 1/4... shuffled, or random: zones of very
			// different sizes.
			if rng.IntN(2) == 0 {
				dim.weights = append(dim.weights, 1/float64(int(1)<<v))
			} else {
				dim.weights = append(dim.weights, 0.1+rng.Float64())
			}
		}
		rng.Shuffle(len(dim.weights), func(i, j int) { dim.weights[i], dim.weights[j] = dim.weights[j], dim.weights[i] })
		ds[d] = dim
	}

	s.Clients = make([]Client, clients)
	for c := range s.Clients {
		cl := Client{ID: fmt.Sprintf("n%02d", c+1), Tags: map[string]string{}, Capacity: 1}
		if rng.IntN(6) == 0 {
			cl.Capacity = 1 + rng.IntN(4)
		}
		picked := make([]int, len(ds))
		for d, dim := range ds {
			if dim.parent >= 0 {
				picked[d] = picked[dim.parent] / dim.fold
				cl.Tags[dim.key] = fmt.Sprintf("%s-of-%s", dim.key, ds[dim.parent].values[picked[d]*dim.fold])
				continue
			}
			picked[d] = weighted(rng, dim.weights)
			cl.Tags[dim.key] = dim.values[picked[d]]
		}
		s.Clients[c] = cl
	}

	// Actives.
	order := rng.Perm(clients)
	switch r := rng.IntN(10); {
	case r < 6: // round-robin over a random client order
		for t := range s.Tasks {
			s.addActive(order[t%clients], t)
		}
	case r < 8: // uniformly at random
		for t := range s.Tasks {
			s.addActive(rng.IntN(clients), t)
		}
	default: // all in the first key's value of a random client
		key, value := s.RackAwareAssignmentTags[0], s.Clients[order[0]].Tags[s.RackAwareAssignmentTags[0]]
		var same []int
		for c, cl := range s.Clients {
			if cl.Tags[key] == value {
				same = append(same, c)
			}
		}
		for t := range s.Tasks {
			s.addActive(same[t%len(same)], t)
		}
	}
	return s
}

func (s *Scenario) addActive(client, task int) {
	c := &s.Clients[client]
	c.PreviousActive = append(c.PreviousActive, task)
	if c.Lags == nil {
		c.Lags = map[string]int64{}
	}
	c.Lags[strconv.Itoa(task)] = 0
}

func weighted(rng *rand.Rand, weights []float64) int {
	var sum float64
	for _, w := range weights {
		sum += w
	}
	x := rng.Float64() * sum
	for i, w := range weights {
		if x < w {
			return i
		}
		x -= w
	}
	return len(weights) - 1
}

// ScaleScenario is the scale check of the Assignor issue: clients clients
// over three tag dimensions (3 regions x 3 zones each x 4 clusters each,
// spread round-robin), tasks tasks with actives round-robin, and 2 standbys.
func ScaleScenario(clients, tasks int) Scenario {
	s := Scenario{
		Name:                    fmt.Sprintf("scale-%dx%d", clients, tasks),
		Tasks:                   tasks,
		NumStandbyReplicas:      2,
		RackAwareAssignmentTags: []string{"zone", "cluster", "region"},
		Clients:                 make([]Client, clients),
	}
	for c := range s.Clients {
		zone := c % 9
		s.Clients[c] = Client{
			ID: fmt.Sprintf("n%04d", c),
			Tags: map[string]string{
				"region":  fmt.Sprintf("region-%d", zone/3),
				"zone":    fmt.Sprintf("zone-%d", zone),
				"cluster": fmt.Sprintf("cluster-%d-%d", zone/3, (c/9)%4),
			},
			Capacity: 1,
		}
	}
	for t := range tasks {
		s.addActive(t%clients, t)
	}
	return s
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

// ReadScenarios reads JSON-line scenarios; each is also returned as the raw
// line it came from.
func ReadScenarios(r io.Reader) ([]Scenario, [][]byte, error) {
	var (
		scenarios []Scenario
		lines     [][]byte
	)
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 64<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var s Scenario
		if err := json.Unmarshal(line, &s); err != nil {
			return nil, nil, fmt.Errorf("scenario line %d: %w", n, err)
		}
		scenarios = append(scenarios, s)
		lines = append(lines, slices.Clone(line))
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("read scenarios: %w", err)
	}
	return scenarios, lines, nil
}
