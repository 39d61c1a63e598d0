// Package cluster is the multi-process test harness: it runs real
// `rackstream run` processes built from this tree (or from an earlier
// revision) on loopback, against a real Kafka broker of the test's own,
// and gives a test the levers and the measurements of a fault test.
//
// The pieces, from the bottom:
//
//   - Proc: one child process, its output captured (and copied to a log
//     file), with Kill (SIGKILL: a crash), Signal (SIGTERM: a clean stop,
//     returning the exit code), Freeze and Thaw (SIGSTOP/SIGCONT).
//   - Build and BuildRevision: the rackstream binary of this tree, or of a
//     git revision (from `git archive`, the work tree untouched), for
//     rolling upgrades.
//   - Group and Instance: `rackstream run` instances sharing one base
//     properties file, each with its own tags, keys (--set), state
//     directory, fixed HTTP port and log file kept across its lives, so
//     that a restart is a pod coming back with its volume. Start,
//     WaitStarted (the start-up line gives the process id), WaitReady
//     (/readyz), Kill, Stop, Freeze, Thaw; Group.Metadata reads the
//     placement, Group.Panics scans every life's log.
//   - Broker: a broker run by deploy/local/kafka.sh in its own directory
//     and on its own ports (never the broker other tests share: a fault
//     test stops and kills it), with Stop (clean), Kill (kill -9) and
//     Resume (start again on its data). It has one listener per instance
//     slot whose advertised address is a Proxy, so that a client
//     bootstrapping through Slots[i].Addr makes every later connection
//     through that proxy too; the proxies go down and up with the broker,
//     so that clients find the port refusing connections, as they would
//     the broker's.
//   - Brokers: kafka.sh's three-broker mode, likewise of the test's own:
//     one KRaft quorum of three nodes in racks zone-a, zone-b and zone-c,
//     each with a listener and a proxy per instance slot
//     (Nodes[k].Slots[i]; SlotAddrs(i) is an instance's bootstrap), per-node
//     Kill, Stop and Resume, and each partition's leader and ISR
//     (Partitions, LeaderOfMost, InSync), so a test can kill -9 the node
//     leading most partitions and wait for it to rejoin.
//   - Proxy: a loopback TCP proxy with Cut (a black hole: nothing crosses,
//     connections hang as in a partition) and Restore, Down (refusing, as a
//     host with nothing on the port) and Up. Put one in front of
//     an instance's broker listener and its HTTP endpoint (Instance.Endpoint)
//     and a cut isolates the instance from the broker and its peers; the
//     instance only calls peers on behalf of requests it receives, which
//     the cut stops too.
//   - Producer: per-key sequence numbers 1, 2, 3... at a steady rate
//     (idempotent, acks=all, unlimited retries, so order survives broker
//     restarts); Stop ends on a round boundary, so every key has the same
//     last number n. Timestamps stamps each record as the test says.
//   - Reader: reads keys over HTTP throughout (actives only, or with
//     max_lag) from the running instances in turn, and measures the
//     longest window in which a key could not be read; StartWindowReader
//     reads a window store's keys.
//   - CheckSequences (pure) and ReadTopic: what an output topic holds of
//     1..n per key: lost (numbers missing), duplicated, out of order;
//     Group.WaitStore: every key of a store at n.
//   - Tumbling.Expect and Check (pure): the final results a windowed
//     count owes the records of its input, replayed with each partition's
//     stream time, and what its output holds of them: missing,
//     duplicated, wrong counts, results of windows open or past grace.
//
// A typical test:
//
//	g := cluster.NewGroup(t, bin, t.TempDir(), map[string]string{"application.id": app, ...})
//	in := g.Add("i0", "127.0.0.1:19600", map[string]string{"zone": "a"})
//	in.Set["bootstrap.servers"] = broker.Slots[0].Addr
//	in.StartReady(time.Minute)
//	prod := cluster.StartProducer(t, []string{broker.Addr}, input, cluster.Keys(48), 40)
//	rd := cluster.StartReader(g, "latest", keys, -1, 50*time.Millisecond)
//	in.Kill(); ...; in.StartReady(time.Minute)
//	n, _ := prod.Stop(time.Minute)
//	g.WaitStore("latest", keys, n, time.Minute)
//	seqs := cluster.CheckSequences(cluster.ReadTopic(t, brokers, output), keys, n)
//
// Timeouts are the caller's: on a small shared machine give generous
// deadlines, and poll (kafkatest.Poll) rather than sleep. The fault suite
// (package chaos) is the main user; see it for complete scenarios.
package cluster
