package window_test

import (
	"fmt"

	"github.com/rackstream/rackstream/window"
)

// A count per key in 10 ms tumbling windows with 5 ms of grace, emitting
// only final results: the task's loop around the pure core.
func Example() {
	def := window.Tumbling(10).WithGrace(5)
	if err := def.Validate(); err != nil {
		panic(err)
	}
	count := window.Aggregator[int]{Init: func() int { return 0 }, Add: func(n int) int { return n + 1 }}
	agg := window.TimeAggregation[int]{Windows: def, Agg: count, Emit: window.EmitOnClose}
	var (
		store     window.MemWindows[int]
		st        window.StreamTime
		lastClose = window.NoTimestamp
	)
	records := []struct {
		key string
		ts  int64
	}{{"alice", 1}, {"bob", 4}, {"alice", 8}, {"alice", 12}, {"bob", 3}, {"bob", 16}, {"alice", 9}, {"bob", 31}}
	for _, r := range records {
		now := st.Observe(r.ts)
		res, err := agg.Process(&store, []byte(r.key), r.ts, now)
		if err != nil {
			panic(err)
		}
		if res.Dropped() {
			fmt.Printf("late: %s@%d at stream time %d\n", r.key, r.ts, now)
		}
		if err := store.Apply([]byte(r.key), res.Ops); err != nil {
			panic(err)
		}
		if f, ok := def.FinalsDue(lastClose, now); ok {
			for _, w := range store.Finals(f) {
				fmt.Printf("final: %s [%d,%d) = %d\n", w.Key, w.Window.Start, w.Window.End, w.Value)
			}
			lastClose = f.Close
		}
	}
	// Output:
	// final: alice [0,10) = 2
	// final: bob [0,10) = 2
	// late: alice@9 at stream time 16
	// final: alice [10,20) = 1
	// final: bob [10,20) = 1
}
