package processor_test

import (
	"context"
	"crypto/rand"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/codec"
	"github.com/rackstream/rackstream/harness/kafkatest"
	"github.com/rackstream/rackstream/processor"
)

// TestATaskStoppedByAChangelogFailureRestartsFromItsLastCommit (restart.go):
// the broker refuses a store's changelog record (larger than the topic's
// max.message.bytes), so the task's commit fails and the task stops, the
// instance not ready. Once an operator raises the limit, the task restarts
// by itself after its backoff, from its last commit: the record is
// processed again, its changelog record lands, and the instance is ready,
// without a process restart. Before, the task stayed stopped for good.
func TestATaskStoppedByAChangelogFailureRestartsFromItsLastCommit(t *testing.T) {
	c := kafkatest.New(t)
	app := c.Name("restart")
	input, changelog := c.Name("restart-in"), app+"-last-changelog"
	c.CreateTopic(input, 1, nil)
	small, compact := "20000", "compact"
	c.CreateTopic(changelog, 1, map[string]*string{"max.message.bytes": &small, "cleanup.policy": &compact})

	topo := processor.New(app)
	last := processor.NewStore(topo, "last", codec.String(), codec.String())
	var mu sync.Mutex
	handled := map[string]int{}
	processor.NewInput(topo, input, codec.String(), codec.String(), func(ctx *processor.Context, k, v string) error {
		mu.Lock()
		handled[k]++
		mu.Unlock()
		return last.Put(ctx, k, v)
	})
	reg := prometheus.NewRegistry()
	o := testOptions(t, c.Brokers, "restart")
	o.Registerer = reg
	processor.SetRebuildBackoff(&o, 200*time.Millisecond, time.Second)
	in := runTopology(t, "restart", topo, o)
	kafkatest.Eventually(t, time.Minute, "instance ready", func() bool { ok, _ := in.rt.Ready(); return ok })

	c.Produce(&kgo.Record{Topic: input, Key: []byte("small"), Value: []byte("v")})
	kafkatest.Eventually(t, time.Minute, "the small record's changelog record", func() bool {
		return lastValues(t, c, changelog)["small"] == "v"
	})
	big := make([]byte, 60_000) // incompressible, three times the limit
	_, _ = rand.Read(big)
	bigValue := string(big)
	c.Produce(&kgo.Record{Topic: input, Key: []byte("big"), Value: big})
	kafkatest.Eventually(t, time.Minute, "the task stopped by the refused changelog record", func() bool {
		ok, _ := in.rt.Ready()
		return !ok && counterValue(t, reg, "rackstream_task_failures_total") >= 1
	})

	// The operator's fix: the limit raised. Until then the task keeps
	// failing, each restart waiting longer (at most a second here).
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	large := strconv.Itoa(1 << 20)
	if _, err := c.Admin().AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "max.message.bytes", Value: &large}}, changelog); err != nil {
		t.Fatal(err)
	}
	kafkatest.Eventually(t, time.Minute, "the big record's changelog record, after a restart", func() bool {
		return lastValues(t, c, changelog)["big"] == bigValue
	})
	kafkatest.Eventually(t, time.Minute, "instance ready again", func() bool { ok, _ := in.rt.Ready(); return ok })
	if n := counterValue(t, reg, "rackstream_task_restarts_total"); n < 1 {
		t.Errorf("rackstream_task_restarts_total = %v, want at least 1", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if handled["big"] < 2 {
		t.Errorf("the big record was handled %d times; want again after the restart (from the last commit)", handled["big"])
	}
}
