package e2e

import (
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/harness/cluster"
	"github.com/rackstream/rackstream/harness/kafkatest"
	"github.com/rackstream/rackstream/partition"
)

var (
	devInstanceRE = regexp.MustCompile(`(?m)^\s+(i\d+)\s+http://(127\.0\.0\.1:\d+)\s`)
	devKafkaRE    = regexp.MustCompile(`(?m)^rackstream dev: kafka (\S+) \(`)
)

// TestDevComesUpPlacesAcrossZonesRoutesQueriesAndFailsOver is the README's
// first command as a user runs it: `rackstream dev` (on its in-process
// kfake, or with --brokers on the real broker when the test has one), six
// instances on free ports.
func TestDevComesUpPlacesAcrossZonesRoutesQueriesAndFailsOver(t *testing.T) {
	app := fmt.Sprintf("e2e-dev-%d", time.Now().UnixNano())
	args := []string{"dev", "--http-port", "0", "--kafka-port", "0", "--rate", "20", "--app", app}
	if brokers := os.Getenv(kafkatest.EnvBrokers); brokers != "" {
		_ = os.Getenv(kafkatest.EnvBrokerRun)
		args = append(args, "--brokers", brokers)
	}
	began := time.Now()
	dev := start(t, "rackstream dev", args...)

	var addrs map[string]string // dev name -> host:port
	var brokers []string
	kafkatest.Eventually(t, time.Minute, "dev lists its instances", func() bool {
		if dev.Exited() {
			t.Fatalf("dev exited with %d", dev.Code())
		}
		out := dev.Out.String()
		ms := devInstanceRE.FindAllStringSubmatch(out, -1)
		k := devKafkaRE.FindStringSubmatch(out)
		if len(ms) < 6 || k == nil {
			return false
		}
		addrs = map[string]string{}
		for _, m := range ms {
			addrs[m[1]] = m[2]
		}
		brokers = strings.Split(k[1], ",")
		return true
	})
	for name, addr := range addrs {
		kafkatest.Eventually(t, 2*time.Minute, name+" /readyz 200", func() bool {
			code, _ := cluster.GetJSON("http://"+addr+"/readyz", nil)
			return code == 200
		})
	}
	t.Logf("all 6 instances ready %v after the start", time.Since(began).Round(time.Millisecond))

	var md cluster.Metadata
	kafkatest.Eventually(t, 2*time.Minute, "every task with one active and 2 standbys in 3 zones", func() bool {
		md = cluster.Metadata{}
		if code, err := cluster.GetJSON("http://"+addrs["i1"]+"/v1/metadata", &md); code != 200 || err != nil {
			return false
		}
		return md.SpreadProblem(12, 6, 2, "zone") == ""
	})
	for _, name := range []string{"i2", "i6"} { // any instance shows it
		var other cluster.Metadata
		if code, err := cluster.GetJSON("http://"+addrs[name]+"/v1/metadata", &other); code != 200 || err != nil {
			t.Fatalf("%s metadata: %d %v", name, code, err)
		}
		if p := other.SpreadProblem(12, 6, 2, "zone"); p != "" && other.Generation == md.Generation {
			t.Errorf("%s's metadata of generation %d: %s", name, other.Generation, p)
		}
	}

	// /metrics tells the placement's quality as /v1/metadata does for the
	// same generation: every zone and cluster as spread as it can be, no
	// task short of standbys.
	kafkatest.Eventually(t, time.Minute, "i3's placement metrics agree with its metadata", func() bool {
		var now cluster.Metadata
		if code, err := cluster.GetJSON("http://"+addrs["i3"]+"/v1/metadata", &now); code != 200 || err != nil {
			return false
		}
		fams, err := cluster.Scrape("http://" + addrs["i3"] + "/metrics")
		if err != nil {
			return false
		}
		if gen, ok := cluster.MetricValue(fams, "rackstream_placement_generation"); !ok || int32(gen) != now.Generation {
			return false // a rebalance in between: read both again
		}
		if now.SpreadProblem(12, 6, 2, "zone") != "" {
			return false // not settled (a probing rebalance): read both again
		}
		for _, d := range now.Quality.Dimensions {
			v, ok := cluster.MetricValue(fams, "rackstream_placement_tasks_repeating", "tag", d.Tag)
			if !ok || int(v) != d.TasksRepeating {
				t.Fatalf("generation %d: rackstream_placement_tasks_repeating{tag=%q} %v (present %v), metadata says %d", now.Generation, d.Tag, v, ok, d.TasksRepeating)
			}
		}
		if len(now.Quality.Dimensions) != 2 || now.Quality.Dimensions[0].Tag != "zone" || now.Quality.Dimensions[0].TasksRepeating != 0 {
			t.Fatalf("generation %d: quality dimensions %+v, want zone (0 repeating) and cluster", now.Generation, now.Quality.Dimensions)
		}
		for _, name := range []string{"rackstream_placement_tasks_short_of_standbys", "rackstream_placement_tasks_without_standby", "rackstream_placement_standby_shortfall"} {
			if v, ok := cluster.MetricValue(fams, name); !ok || v != 0 {
				t.Fatalf("generation %d: %s %v (present %v), want 0", now.Generation, name, v, ok)
			}
		}
		return true
	})

	// A key of our own, so that the built-in producer does not move it.
	key := fmt.Sprintf("probe-%d", time.Now().UnixNano())
	task := partition.Murmur2().Partition([]byte(key), 12)
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(partition.Kgo(partition.Murmur2())))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for range 7 {
		if err := cl.ProduceSync(t.Context(), &kgo.Record{Topic: app + "-events", Key: []byte(key), Value: []byte("x")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// Right after the start the placement may still change (a warmup that
	// caught up triggers a probing rebalance that moves its task), so the
	// owner is read from a settled placement (no probing rebalance pending)
	// of the same generation as the answer, and the read of the owner and
	// the query are repeated until the generations agree.
	var (
		owner, ownerAddr, nonOwner string
		ans                        cluster.KeyAnswer
		gen                        int32
	)
	kafkatest.Eventually(t, time.Minute, "count of the probe key is 7 on a non-owner, in a settled generation", func() bool {
		var before, after cluster.Metadata
		if code, err := cluster.GetJSON("http://"+addrs["i1"]+"/v1/metadata", &before); code != 200 || err != nil {
			return false
		}
		if before.ProbingRebalanceNeeded || before.SpreadProblem(12, 6, 2, "zone") != "" {
			return false
		}
		owner = before.Tasks[task].Active
		ownerAddr, _ = before.Client(owner)
		nonOwner = ""
		for _, name := range slices.Sorted(maps.Keys(addrs)) {
			if addrs[name] != ownerAddr {
				nonOwner = name
				break
			}
		}
		ans = cluster.KeyAnswer{}
		if code, _ := cluster.GetJSON("http://"+addrs[nonOwner]+"/v1/stores/count/keys/"+key, &ans); code != 200 || string(ans.Value) != "7" {
			return false
		}
		if code, err := cluster.GetJSON("http://"+addrs["i1"]+"/v1/metadata", &after); code != 200 || err != nil {
			return false
		}
		gen = before.Generation
		return ans.Generation == gen && after.Generation == gen
	})
	if ans.ServedBy != owner || ans.Role != "active" || ans.Task != task {
		t.Errorf("answer from %s at generation %d: served by %s as %s for task %d; want the owner %s, active, task %d", nonOwner, gen, ans.ServedBy, ans.Role, ans.Task, owner, task)
	}

	// Kill the owner through the admin route of another instance.
	code, body, err := cluster.Post("http://" + addrs[nonOwner] + "/v1/dev/instances/" + owner + "/kill")
	if err != nil || code != 202 {
		t.Fatalf("kill %s: %d %s %v", owner, code, body, err)
	}
	killedAt := time.Now()
	kafkatest.Eventually(t, 2*time.Minute, "the probe key's task taken over and still 7", func() bool {
		var after cluster.Metadata
		if code, err := cluster.GetJSON("http://"+addrs[nonOwner]+"/v1/metadata", &after); code != 200 || err != nil {
			return false
		}
		if a := after.Tasks[task].Active; a == "" || a == owner || after.Generation <= gen {
			return false
		}
		if ep, _ := after.Client(owner); ep != "" {
			return false // still a member: the task may not have moved for the kill
		}
		ans = cluster.KeyAnswer{}
		code, _ := cluster.GetJSON("http://"+addrs[nonOwner]+"/v1/stores/count/keys/"+key, &ans)
		return code == 200 && string(ans.Value) == "7" && ans.ServedBy != owner && ans.Role == "active"
	})
	t.Logf("task %d moved from %s to %s %v after the kill", task, owner, ans.ServedBy, time.Since(killedAt).Round(time.Millisecond))
	if code, _ := cluster.GetJSON("http://"+ownerAddr+"/healthz", nil); code != 0 {
		t.Errorf("the killed instance still answers HTTP (%d)", code)
	}

	// Bad admin requests are refused; the killed instance starts again.
	if code, _, _ := cluster.Post("http://" + addrs[nonOwner] + "/v1/dev/instances/nosuch/kill"); code != 404 {
		t.Errorf("kill of an unknown instance: %d, want 404", code)
	}
	if code, _ := cluster.GetJSON("http://"+addrs[nonOwner]+"/v1/dev/instances/i1/kill", nil); code != 405 {
		t.Errorf("GET of a kill route: %d, want 405", code)
	}
	if code, body, err := cluster.Post("http://" + addrs[nonOwner] + "/v1/dev/instances/" + owner + "/start"); code != 200 || err != nil {
		t.Fatalf("start %s: %d %s %v", owner, code, body, err)
	}
	kafkatest.Eventually(t, 2*time.Minute, "the restarted instance ready", func() bool {
		code, _ := cluster.GetJSON("http://"+ownerAddr+"/readyz", nil)
		return code == 200
	})

	// The console answers on stdin.
	fmt.Fprintln(dev.In, "status")
	kafkatest.Eventually(t, 30*time.Second, "console status", func() bool {
		return strings.Contains(dev.Out.String(), "records produced:")
	})

	if code := dev.Signal(syscall.SIGINT, time.Minute); code != 0 {
		t.Fatalf("dev exited %d after SIGINT", code)
	}
	if !strings.Contains(dev.Out.String(), "rackstream dev: stopped") {
		t.Errorf("no clean stop in the output")
	}
}
