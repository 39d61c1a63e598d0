package cluster

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Broker is a real Apache Kafka broker of the test's own, run by
// deploy/local/kafka.sh in its own directory and on its own ports: never
// the broker other tests share, since a fault test stops and kills it.
//
// Besides kafka.sh's PLAINTEXT listener (Addr, for the test's own clients)
// it has one listener per instance slot, whose advertised address is a
// Proxy: a Kafka client that bootstraps through Slots[i].Addr is told to
// dial Slots[i].Addr for every later connection too, so cutting that proxy
// cuts every connection the client has to the broker.
type Broker struct {
	// Dir is the broker's run directory (RACKSTREAM_KAFKA_DIR).
	Dir string
	// Addr is the PLAINTEXT listener, host:port.
	Addr string
	// Slots are the per-instance listeners' proxies.
	Slots []*Proxy

	sh *kafkaSh
	// release gives up the reservation of the broker's ports (ports.go)
	// when the broker is closed, not when it stops: a broker stopped or
	// killed mid-test binds the same ports again.
	release func()
}

// BrokerOptions configure StartBroker.
type BrokerOptions struct {
	// Dir is the run directory; empty: a directory under the system's
	// temporary directory named after this module's path, so that a broker
	// left behind by an interrupted run of the same tree is found (and
	// stopped) by the next one.
	Dir string
	// FromPort is where the search for free ports starts (19300 when 0).
	FromPort int
	// Slots is the number of per-instance listeners.
	Slots int
	// Heap is the JVM heap options (kafka.sh's default when empty).
	Heap string
}

// StartBroker starts a fresh broker (an earlier one in the same directory is
// stopped first). It runs in TestMain: it takes no testing.TB and returns
// errors; call Close when done.
func StartBroker(o BrokerOptions) (*Broker, error) {
	// kafka.sh's own listeners, every one on a port of ours (so that
	// nothing collides with the shared broker), then a listener and a
	// proxy per slot (RACKSTREAM_KAFKA_EXTRA_LISTENERS).
	sh, base, release, err := claimKafka(o.Dir, "rackstream-chaos-kafka-", o.FromPort, len(kafkaPortVars)+2*o.Slots)
	if err != nil {
		return nil, err
	}
	b := &Broker{Dir: sh.dir, sh: sh, release: release}
	slots, listeners, err := slotProxies(base+len(kafkaPortVars), o.Slots)
	if err != nil {
		b.Close(false)
		return nil, err
	}
	b.Slots = slots
	// A broker killed with kill -9 and restarted waits until its
	// controller (itself) expires its old registration, 9 s by default.
	// Shorter sessions (3 s was tried) make an overloaded machine's
	// controller time out its own broker's heartbeats and fence it: keep
	// Kafka's defaults, and give start-ups a generous deadline.
	sh.setenv("EXTRA_LISTENERS", strings.Join(listeners, " "))
	sh.setenv("START_TIMEOUT", "300")
	if o.Heap != "" {
		sh.setenv("HEAP", o.Heap)
	}
	b.Addr = "127.0.0.1:" + strconv.Itoa(base)
	if _, err := sh.run("start"); err != nil {
		b.Close(false)
		return nil, err
	}
	return b, nil
}

// slotProxies starts a proxy per slot for a broker whose slot listeners
// take the ports first, first+2, ..., each proxy the port after its
// listener's. It returns the proxies and kafka.sh's
// RACKSTREAM_KAFKA_EXTRA_LISTENERS entries for them.
func slotProxies(first, n int) ([]*Proxy, []string, error) {
	var proxies []*Proxy
	var listeners []string
	for i := range n {
		lport, pport := first+2*i, first+2*i+1
		listeners = append(listeners, fmt.Sprintf("SLOT%d:%d:%d", i, lport, pport))
		p, err := NewProxy(fmt.Sprintf("127.0.0.1:%d", pport), fmt.Sprintf("127.0.0.1:%d", lport))
		if err != nil {
			for _, p := range proxies {
				p.Close()
			}
			return nil, nil, err
		}
		proxies = append(proxies, p)
	}
	return proxies, listeners, nil
}

// Stop stops the broker cleanly (SIGTERM: a controlled shutdown). The slot
// proxies go down with it: a client then finds its port refusing
// connections, as it would find the broker's.
func (b *Broker) Stop() error {
	_, err := b.sh.run("stop")
	b.slotsDown()
	return err
}

func (b *Broker) slotsDown() {
	for _, p := range b.Slots {
		p.Down()
	}
}

// Kill is kill -9 of the broker: it waits until the process is gone.
func (b *Broker) Kill() error {
	raw, err := os.ReadFile(filepath.Join(b.Dir, "kafka.pid"))
	if err != nil {
		return fmt.Errorf("cluster: broker pid: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		return fmt.Errorf("cluster: broker pid file: %w", err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("cluster: kill -9 broker pid %d: %w", pid, err)
	}
	b.slotsDown()
	// Dead when its process is gone, or a zombie (a container's init may
	// be slow to reap it) with no thread left but the main one (the other
	// threads of a killed JVM exit, and release its files, after the main
	// thread turns zombie), and its listener refuses connections.
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err == nil && !(strings.Contains(string(st), "State:\tZ") && strings.Contains(string(st), "Threads:\t1\n")) {
			continue
		}
		if c, err := net.DialTimeout("tcp", b.Addr, time.Second); err == nil {
			c.Close()
			continue
		}
		return nil
	}
	return fmt.Errorf("cluster: broker pid %d still alive a minute after SIGKILL", pid)
}

// Resume starts the broker again on its data (after Stop or Kill), then
// its slot proxies.
func (b *Broker) Resume() error {
	if _, err := b.sh.run("resume"); err != nil {
		return err
	}
	for _, p := range b.Slots {
		if err := p.Up(); err != nil {
			return err
		}
	}
	return nil
}

// Close stops the broker and the proxies and, unless keep is set (to read
// the broker's logs after a failure), removes the run directory.
func (b *Broker) Close(keep bool) {
	b.sh.run("stop")
	for _, p := range b.Slots {
		p.Close()
	}
	if b.release != nil {
		b.release()
	}
	if !keep {
		removeRunDir(b.Dir)
	}
}
