package balancer_test

import (
	"context"
	"fmt"
	"log"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/assignor/balancer"
	"github.com/rackstream/rackstream/tags"
)

// A member joins the group with the balancer's options, calls the
// balancer's OnPartitionsAssigned first in its own hook, and reads the
// placement to route a query for task 7.
func Example() {
	s := balancer.DefaultSettings() // then this member's identity and settings
	s.ApplicationID = "orders"
	s.ProcessID = "0b5e7c1a-3f0e-4a57-9a39-6e2f4c1d9b21" // persisted in state.dir
	s.Endpoint = "orders-0.orders:8080"
	s.Tags = tags.MustSet("zone", "eu-central-1a", "cluster", "k8s-cluster1")
	s.InputTopics, s.ChangelogTopics = []string{"orders"}, []string{"orders-totals-changelog"}
	s.Placement.NumStandbyReplicas, s.Placement.RackAwareAssignmentTags = 2, tags.Keys{"zone", "cluster"}
	s.Checkpoints = func() map[int32]int64 { return nil } // the state engine's next offsets per task
	b, err := balancer.New(s)
	if err != nil {
		log.Fatal(err)
	}
	opts := append(b.Opts(),
		kgo.SeedBrokers("127.0.0.1:9092"),
		kgo.OnPartitionsAssigned(func(ctx context.Context, cl *kgo.Client, assigned map[string][]int32) {
			b.OnPartitionsAssigned(ctx, cl, assigned) // first: makes this generation's placement current
			a, _ := b.Assignment()
			fmt.Println("active", a.Active, "standby", a.Standby, "warmup", a.Warmup)
		}),
	)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		log.Fatal(err)
	}
	defer cl.Close() // leaves the group: its tasks move at once
	if err := b.Err(); err != nil {
		log.Fatal(err) // e.g. group.instance.id was set
	}

	if p := b.Placement(); p != nil {
		if m, ok := p.Active(7); ok {
			fmt.Println("task 7 is served by", m.ProcessID, "at", m.Endpoint)
		}
	}
}
