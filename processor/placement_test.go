package processor_test

import (
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rackstream/rackstream/assignor/balancer"
	"github.com/rackstream/rackstream/harness/kafkatest"
	"github.com/rackstream/rackstream/processor"
)

// TestOnPlacementPublishesEachNewPlacementOnce: every instance hears of
// each new placement once, in generation order, with the settings the
// leader planned it with (the same on every member, whatever its own
// configuration says).
func TestOnPlacementPublishesEachNewPlacementOnce(t *testing.T) {
	c := kafkatest.New(t)
	a := newCountApp(t, c, 4)
	var mu sync.Mutex
	seen := make(map[int][]*balancer.Placement)
	ins := a.startCluster(t, 2, 1, func(i int, o *processor.Options) {
		o.Placement.AcceptableRecoveryLag = int64(1000 + i) // a different lag per instance
		o.OnPlacement = func(p *balancer.Placement) {
			mu.Lock()
			defer mu.Unlock()
			seen[i] = append(seen[i], p)
		}
	})
	kafkatest.Eventually(t, 2*time.Minute, "both instances ready", func() bool { return allReady(ins...) })
	kafkatest.Eventually(t, time.Minute, "both instances heard of the same latest placement", func() bool {
		mu.Lock()
		defer mu.Unlock()
		if len(seen[0]) == 0 || len(seen[1]) == 0 {
			return false
		}
		p0, p1 := seen[0][len(seen[0])-1], seen[1][len(seen[1])-1]
		return p0.Generation == p1.Generation && len(p0.Members) == 2 &&
			p0.Generation == ins[0].rt.Placement().Generation && p1.Generation == ins[1].rt.Placement().Generation
	})
	mu.Lock()
	defer mu.Unlock()
	for i, ps := range seen {
		gens := make([]int32, len(ps))
		for j, p := range ps {
			gens[j] = p.Generation
		}
		if !slices.IsSorted(gens) || len(slices.Compact(slices.Clone(gens))) != len(gens) {
			t.Errorf("instance %d heard generations %v; want each once, ascending", i, gens)
		}
	}
	last0, last1 := seen[0][len(seen[0])-1], seen[1][len(seen[1])-1]
	if last0.Settings == nil || last1.Settings == nil {
		t.Fatalf("placements without the leader's settings: %+v %+v", last0.Settings, last1.Settings)
	}
	s0, s1 := last0.Settings, last1.Settings
	if s0.NumStandbyReplicas != 1 || s0.AcceptableRecoveryLag != s1.AcceptableRecoveryLag || s0.MaxWarmupReplicas != s1.MaxWarmupReplicas ||
		!slices.Equal(s0.RackAwareAssignmentTags, s1.RackAwareAssignmentTags) || (s0.AcceptableRecoveryLag != 1000 && s0.AcceptableRecoveryLag != 1001) {
		t.Errorf("members disagree on the leader's settings, or they are not one instance's: %+v vs %+v", s0, s1)
	}
}

// TestASecondInstanceTakesTheSeriesOfTheTasksItTakes: when tasks move to a
// second instance, the first one's per-task series (records, latency, lag)
// go with them. Its /metrics shows only the tasks it still runs, so no
// alert fires on a value nobody updates.
func TestASecondInstanceTakesTheSeriesOfTheTasksItTakes(t *testing.T) {
	c := kafkatest.New(t)
	a := newCountApp(t, c, 4)
	a.produce(t, 400, 20, 0)
	first := a.start(t, "first", a.options(t, "first", "a"))
	a.waitCommitted(t, time.Minute)
	perTask := func(in *instance) map[string]string { return processor.SeriesTasks(t, in.reg) }
	if got := perTask(first)["rackstream_process_records_total"]; got != "0,1,2,3" {
		t.Fatalf("the first instance's series before the move: %q; want tasks 0,1,2,3", got)
	}
	second := a.start(t, "second", a.options(t, "second", "b"))
	kafkatest.Eventually(t, 2*time.Minute, "both instances ready with tasks split", func() bool {
		return allReady(first, second) && len(activeTasks(first)) == 2 && len(activeTasks(second)) == 2
	})
	a.produce(t, 400, 20, 0) // the second instance processes records of its tasks
	a.waitCommitted(t, time.Minute)
	kafkatest.Eventually(t, time.Minute, "each instance's series are its own tasks'", func() bool {
		f, s := perTask(first), perTask(second)
		return f["rackstream_process_records_total"] == join(activeTasks(first)) &&
			s["rackstream_process_records_total"] == join(activeTasks(second)) &&
			f["rackstream_consumer_lag_records"] == join(activeTasks(first))
	})
}

func join(ts []int32) string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = strconv.Itoa(int(t))
	}
	return strings.Join(s, ",")
}
