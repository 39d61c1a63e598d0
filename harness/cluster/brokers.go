package cluster

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Brokers is a three-broker Kafka cluster of the test's own, run by
// deploy/local/kafka.sh's three-broker mode in its own directory and on its
// own ports: one KRaft quorum of three combined broker and controller
// nodes, node n in rack zone-a, zone-b or zone-c, follower fetching on.
//
// Every node has one listener per instance slot whose advertised address is
// a Proxy, as Broker has: a client that bootstraps through SlotAddrs(i) is
// told to dial slot i's proxy of each node for every later connection, so
// cutting Nodes[k].Slots[i] cuts instance i off node k alone while that
// node stays in its quorum.
type Brokers struct {
	// Dir is the cluster's run directory (RACKSTREAM_KAFKA_DIR).
	Dir string
	// Nodes are the brokers, Nodes[k] with node id k+1.
	Nodes []*BrokerNode

	sh  *kafkaSh
	cl  *kgo.Client
	adm *kadm.Client
	// release gives up the reservation of the cluster's ports when it is
	// closed, not when a node stops: a node binds the same ports again.
	release func()
}

// BrokerNode is one node of Brokers.
type BrokerNode struct {
	// ID is the node id (broker and controller), 1 to 3.
	ID int32
	// Rack is the node's broker.rack.
	Rack string
	// Addr is the node's PLAINTEXT listener, host:port.
	Addr string
	// Slots are the proxies of the node's per-instance listeners.
	Slots []*Proxy
}

// BrokersOptions configure StartBrokers.
type BrokersOptions struct {
	// Dir is the run directory; empty: one under the system's temporary
	// directory named after this module's path (a cluster an interrupted
	// run left there is stopped first).
	Dir string
	// FromPort is where the search for free ports starts (19300 when 0).
	FromPort int
	// Slots is the number of per-instance listeners on each node.
	Slots int
	// Heap is each node's JVM heap options (kafka.sh's default, 384 MiB at
	// most, when empty).
	Heap string
	// ReplicationFactor and MinISR are the brokers' defaults for every
	// topic, the internal ones included (kafka.sh's 3 and 2 when 0).
	ReplicationFactor, MinISR int
}

// brokerNodes is the number of nodes kafka.sh's three-broker mode runs.
const brokerNodes = 3

// StartBrokers starts a fresh three-broker cluster and returns once every
// node lists all three brokers. Like StartBroker it takes no testing.TB, so
// that TestMain can call it; call Close when done. An error wraps
// ErrKafkaUnavailable when Kafka cannot run on this machine.
func StartBrokers(o BrokersOptions) (*Brokers, error) {
	// Each node takes a block of ports: kafka.sh's own listeners, then a
	// listener and its proxy per slot. kafka.sh shifts node n's ports by
	// (n-1) blocks (RACKSTREAM_KAFKA_PORT_STEP).
	step := len(kafkaPortVars) + 2*o.Slots
	sh, base, release, err := claimKafka(o.Dir, "rackstream-brokers-kafka-", o.FromPort, brokerNodes*step)
	if err != nil {
		return nil, err
	}
	b := &Brokers{Dir: sh.dir, sh: sh, release: release}
	var listeners []string
	for k := range brokerNodes {
		first := base + k*step
		slots, ls, err := slotProxies(first+len(kafkaPortVars), o.Slots)
		if err != nil {
			b.Close(false)
			return nil, err
		}
		if k == 0 {
			listeners = ls
		}
		b.Nodes = append(b.Nodes, &BrokerNode{
			ID:    int32(k + 1),
			Rack:  "zone-" + string(rune('a'+k)),
			Addr:  "127.0.0.1:" + strconv.Itoa(first),
			Slots: slots,
		})
	}
	sh.setenv("BROKERS", strconv.Itoa(brokerNodes))
	sh.setenv("PORT_STEP", strconv.Itoa(step))
	sh.setenv("EXTRA_LISTENERS", strings.Join(listeners, " "))
	// A node killed with kill -9 is let back in only once the controller
	// has expired its old registration (9 s); three JVMs start slowly on
	// a small machine.
	sh.setenv("START_TIMEOUT", "300")
	if o.Heap != "" {
		sh.setenv("HEAP", o.Heap)
	}
	if o.ReplicationFactor != 0 {
		sh.setenv("REPLICATION_FACTOR", strconv.Itoa(o.ReplicationFactor))
	}
	if o.MinISR != 0 {
		sh.setenv("MIN_ISR", strconv.Itoa(o.MinISR))
	}
	if _, err := sh.run("start"); err != nil {
		b.Close(false)
		return nil, err
	}
	b.cl, err = kgo.NewClient(kgo.SeedBrokers(b.Addrs()...))
	if err != nil {
		b.Close(false)
		return nil, fmt.Errorf("cluster: admin client for %v: %w", b.Addrs(), err)
	}
	b.adm = kadm.NewClient(b.cl)
	return b, nil
}

// Addrs returns every node's PLAINTEXT listener, for the test's own
// clients.
func (b *Brokers) Addrs() []string {
	out := make([]string, len(b.Nodes))
	for k, n := range b.Nodes {
		out[k] = n.Addr
	}
	return out
}

// SlotAddrs returns slot i's proxy on every node: an instance's
// bootstrap.servers (joined with commas).
func (b *Brokers) SlotAddrs(i int) []string {
	out := make([]string, len(b.Nodes))
	for k, n := range b.Nodes {
		out[k] = n.Slots[i].Addr
	}
	return out
}

// Node returns the node with id, or panics: ids are 1 to 3.
func (b *Brokers) Node(id int32) *BrokerNode {
	if id < 1 || int(id) > len(b.Nodes) {
		panic(fmt.Sprintf("cluster: no broker node %d (nodes 1 to %d)", id, len(b.Nodes)))
	}
	return b.Nodes[id-1]
}

// Kill is kill -9 of node id: it returns once the process is gone and its
// listener refuses connections. The node's slot proxies go down with it.
func (b *Brokers) Kill(id int32) error {
	_, err := b.sh.run("kill", strconv.Itoa(int(id)))
	b.Node(id).slotsDown()
	return err
}

// Stop stops node id cleanly (SIGTERM: a controlled shutdown, its
// leaderships moved first). Its slot proxies go down with it.
func (b *Brokers) Stop(id int32) error {
	_, err := b.sh.run("stop", strconv.Itoa(int(id)))
	b.Node(id).slotsDown()
	return err
}

// Resume starts node id again on its data (after Stop or Kill) and returns
// once it answers clients (the controller has let it back in), then brings
// its slot proxies up. Catching up and rejoining the ISRs comes later: poll
// Partitions.
func (b *Brokers) Resume(id int32) error {
	if _, err := b.sh.run("resume", strconv.Itoa(int(id))); err != nil {
		return err
	}
	for _, p := range b.Node(id).Slots {
		if err := p.Up(); err != nil {
			return err
		}
	}
	return nil
}

func (n *BrokerNode) slotsDown() {
	for _, p := range n.Slots {
		p.Down()
	}
}

// Close stops every node and proxy and, unless keep is set (to read the
// logs after a failure), removes the run directory.
func (b *Brokers) Close(keep bool) {
	if b.cl != nil {
		b.cl.Close()
	}
	b.sh.run("stop")
	for _, n := range b.Nodes {
		for _, p := range n.Slots {
			p.Close()
		}
	}
	if b.release != nil {
		b.release()
	}
	if !keep {
		removeRunDir(b.Dir)
	}
}
