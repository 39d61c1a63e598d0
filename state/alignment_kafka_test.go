package state

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/harness/kafkatest"
)

// openAligned opens a Manager whose changelogs align their leaders with
// input's.
func (e *env) openAligned(input string) *Manager {
	e.t.Helper()
	o := DefaultOptions()
	o.Dir, o.ApplicationID = e.t.TempDir(), e.app
	o.ClientOpts = []kgo.Opt{kgo.SeedBrokers(e.c.Brokers...)}
	o.Logger = testLogger(e.t)
	o.ChangelogLeadersWith = input
	m, err := Open(o)
	if err != nil {
		e.t.Fatalf("open state: %v", err)
	}
	e.t.Cleanup(func() { m.Close() })
	return m
}

// leadersKnown polls the metadata of topics until every partition has a
// leader, and returns it with each broker's rack.
func leadersKnown(t *testing.T, adm *kadm.Client, topics ...string) (kadm.Metadata, map[int32]string) {
	t.Helper()
	var md kadm.Metadata
	kafkatest.Poll(t, time.Minute, 100*time.Millisecond, "every partition has a leader", func() bool {
		var err error
		md, err = adm.Metadata(t.Context(), topics...)
		if err != nil {
			return false
		}
		for _, topic := range topics {
			td := md.Topics[topic]
			if td.Err != nil || len(td.Partitions) == 0 {
				return false
			}
			for _, pd := range td.Partitions {
				if pd.Leader < 0 {
					return false
				}
			}
		}
		return true
	})
	rack := make(map[int32]string)
	for _, b := range md.Brokers {
		if b.Rack != nil {
			rack[b.NodeID] = *b.Rack
		}
	}
	return md, rack
}

// TestCreatedChangelogLeadsInTheInputLeadersRacks runs on kfake and the
// single real broker (every broker in one rack, or none) and on the
// three-broker mode (a rack per broker):
// the changelog's partition i leads in the rack of the input's partition
// i leader, and its replicas span min(rf, racks) racks, for a replication
// factor given and for the brokers' default (-1).
func TestCreatedChangelogLeadsInTheInputLeadersRacks(t *testing.T) {
	for _, rf := range []int16{2, -1} {
		t.Run(fmt.Sprintf("replication factor %d", rf), func(t *testing.T) {
			const tasks = 6
			e := newEnv(t, tasks, "counts")
			input := e.c.Name("input")
			e.c.CreateTopic(input, tasks, nil)
			adm := e.c.Admin()
			brokers, err := adm.BrokerMetadata(e.ctx())
			if err != nil {
				t.Fatal(err)
			}
			if rf > 0 {
				rf = min(rf, int16(len(brokers.Brokers)))
			}
			m := e.openAligned(input)
			if err := m.EnsureChangelogs(e.ctx(), tasks, rf, e.stores); err != nil {
				t.Fatal(err)
			}
			changelog := ChangelogTopic(e.app, "counts")
			md, rack := leadersKnown(t, adm, input, changelog)
			racks := make(map[string]bool) // a broker without a rack counts as one rack, ""
			for _, b := range md.Brokers {
				racks[rack[b.NodeID]] = true
			}
			n := len(md.Topics[changelog].Partitions[0].Replicas)
			if rf > 0 && n != int(rf) {
				t.Errorf("changelog partition 0 has %d replicas, want %d", n, rf)
			}
			for p := range int32(tasks) {
				in, cl := md.Topics[input].Partitions[p], md.Topics[changelog].Partitions[p]
				if rack[cl.Leader] != rack[in.Leader] {
					t.Errorf("changelog partition %d leads on broker %d (rack %q); the input's leader is broker %d (rack %q)",
						p, cl.Leader, rack[cl.Leader], in.Leader, rack[in.Leader])
				}
				if len(cl.Replicas) != n {
					t.Errorf("changelog partition %d has replicas %v, want %d", p, cl.Replicas, n)
				}
				spanned := make(map[string]bool)
				for _, b := range cl.Replicas {
					spanned[rack[b]] = true
				}
				if e.c.Real() && len(spanned) != min(n, len(racks)) {
					t.Errorf("changelog partition %d's replicas %v span %d racks, want %d", p, cl.Replicas, len(spanned), min(n, len(racks)))
				}
			}
			if got := e.c.TopicConfig(changelog, "cleanup.policy"); got != "compact" {
				t.Errorf("cleanup.policy=%q, want compact", got)
			}
			if n > 1 {
				if got, want := e.c.TopicConfig(changelog, "min.insync.replicas"), fmt.Sprint(n-1); got != want {
					t.Errorf("min.insync.replicas=%q, want %s", got, want)
				}
			}
		})
	}
}

// TestExistingChangelogKeepsItsReplicas: alignment applies only to a
// topic being created.
func TestExistingChangelogKeepsItsReplicas(t *testing.T) {
	const tasks = 3
	e := newEnv(t, tasks, "counts")
	input := e.c.Name("input")
	e.c.CreateTopic(input, tasks, nil)
	changelog := ChangelogTopic(e.app, "counts")
	e.c.CreateTopic(changelog, tasks, map[string]*string{"cleanup.policy": kadm.StringPtr("compact")})
	adm := e.c.Admin()
	before, _ := leadersKnown(t, adm, changelog)
	m := e.openAligned(input)
	if err := m.EnsureChangelogs(e.ctx(), tasks, 3, e.stores); err != nil {
		t.Fatal(err)
	}
	after, _ := leadersKnown(t, adm, changelog)
	for p := range int32(tasks) {
		b, a := before.Topics[changelog].Partitions[p], after.Topics[changelog].Partitions[p]
		if len(a.Replicas) != 1 || a.Replicas[0] != b.Replicas[0] {
			t.Errorf("partition %d: replicas %v became %v", p, b.Replicas, a.Replicas)
		}
	}
}
