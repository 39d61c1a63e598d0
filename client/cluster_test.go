package client_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/assignor"
	"github.com/rackstream/rackstream/client"
	"github.com/rackstream/rackstream/config"
	"github.com/rackstream/rackstream/harness/kafkatest"
	"github.com/rackstream/rackstream/partition"
	"github.com/rackstream/rackstream/service"
)

// The cluster test runs each Rackstream instance in its own process, so that
// a kill is a real SIGKILL: the test binary re-executed with envInstance
// set runs instanceMain, an instance of service configured by the
// settings in envSettings (one key=value a line), until SIGTERM.
const (
	envInstance = "RACKSTREAM_CLIENT_TEST_INSTANCE"
	envSettings = "RACKSTREAM_CLIENT_TEST_SETTINGS"
)

func TestMain(m *testing.M) {
	if os.Getenv(envInstance) != "" {
		os.Exit(instanceMain())
	}
	os.Exit(m.Run())
}

func instanceMain() int {
	cfg, err := config.Load(config.Sources{Set: strings.Split(os.Getenv(envSettings), "\n")})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	log := service.NewLogger(os.Stderr, config.LogJSON, 0)
	in, err := service.New(service.Options{Config: cfg, Logger: log})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := in.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// proc is an instance process.
type proc struct {
	cmd  *exec.Cmd
	mu   sync.Mutex // guards id, http, log
	id   string
	http string
	log  []string
}

func (p *proc) started() (id, hostport string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.id, p.http
}

func startInstance(t *testing.T, name string, settings ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(os.Args[0], "-test.run=^$")}
	p.cmd.Env = append(os.Environ(), envInstance+"=1", envSettings+"="+strings.Join(settings, "\n"))
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var line map[string]any
			p.mu.Lock()
			p.log = append(p.log, sc.Text())
			if json.Unmarshal(sc.Bytes(), &line) == nil && line["msg"] == "rackstream instance started" {
				p.id, _ = line["instance"].(string)
				p.http, _ = line["http"].(string)
			}
			p.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		p.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { p.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			p.cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			p.mu.Lock()
			t.Logf("%s log (tail):\n%s", name, strings.Join(p.log[max(0, len(p.log)-30):], "\n"))
			p.mu.Unlock()
		}
	})
	kafkatest.Eventually(t, time.Minute, name+" started", func() bool { id, _ := p.started(); return id != "" })
	return p
}

// TestClientReadsKeysAndScansWhileAnInstanceIsKilled runs three instances
// of the built-in count processor with one standby per task and a token,
// and reads every key and a paged scan through the client; then SIGKILLs
// the instance that is active for the most tasks and reads again at once,
// before the group has noticed: the killed instance's keys are answered by
// their standbys within max_lag, with the right counts. Once the group has
// rebalanced, the client follows the new generation and reads from the new
// actives without max_lag.
func TestClientReadsKeysAndScansWhileAnInstanceIsKilled(t *testing.T) {
	const (
		partitions = 6
		keys       = 30
		token      = "client-test-token"
		maxLag     = 100
	)
	c := kafkatest.New(t)
	app, input := c.Name("client-count"), c.Name("client-count-in")
	c.CreateTopic(input, partitions, nil)
	dir := t.TempDir()
	var ins []*proc
	for i := range 3 {
		name := fmt.Sprintf("instance-%d", i)
		ins = append(ins, startInstance(t, name,
			"application.id="+app,
			"bootstrap.servers="+strings.Join(c.Brokers, ","),
			"processor.type=count",
			"processor.input.topic="+input,
			"num.standby.replicas=1",
			"http.listen=127.0.0.1:0",
			"http.auth.token="+token,
			"commit.interval.ms=100",
			"statestore.cache.max.bytes=0",
			"session.timeout.ms=3000",
			"replication.factor=1",
			"num.stream.threads=1",
			"state.dir="+filepath.Join(dir, name),
		))
	}
	_, seed := ins[0].started()
	cl, err := client.New(client.Options{Endpoints: []string{seed}, AuthToken: token})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	want := map[string]int64{}
	var recs []*kgo.Record
	for k := range keys {
		key := "user-" + strconv.Itoa(k)
		for range k%5 + 1 {
			recs = append(recs, &kgo.Record{Topic: input, Key: []byte(key), Value: []byte("click")})
			want[key]++
		}
	}
	c.Client(kgo.RecordPartitioner(partition.Kgo(partition.Murmur2()))).ProduceSync(t.Context(), recs...)

	// A settled placement (every task with an active and a standby, no
	// probing rebalance pending), every input record and every key's
	// count committed, and every standby holding what its active committed.
	adm := c.Admin()
	var md *assignor.Metadata
	kafkatest.Eventually(t, 2*time.Minute, "a settled placement with caught-up standbys and every count", func() bool {
		var err error
		if md, err = cl.Metadata(t.Context()); err != nil || !settled(t, seed, token, md, partitions) {
			return false
		}
		return caughtUp(t, c, adm, app, input, token, md, ins, want) && cl.Generation() == md.Generation
	})
	checkScan(t, cl, want, "before the kill")
	if _, err := cl.Get(t.Context(), "count", []byte("nobody")); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("an absent key: %v, want ErrNotFound", err)
	}
	var cerr *client.Error
	if _, err := cl.Get(t.Context(), "nope", []byte("user-1")); errors.Is(err, client.ErrNotFound) || !errors.As(err, &cerr) || cerr.Status != http.StatusNotFound {
		t.Errorf("an unknown store: %v, want a 404 *client.Error that is not ErrNotFound", err)
	}

	// SIGKILL the instance active for the most tasks.
	victim, most := ins[0], -1
	for _, p := range ins {
		id, _ := p.started()
		n := 0
		for _, tk := range md.Tasks {
			if tk.Active == id {
				n++
			}
		}
		if n > most {
			victim, most = p, n
		}
	}
	victimID, _ := victim.started()
	if err := victim.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	victim.cmd.Process.Wait()
	t.Logf("killed %s, active for %d of %d tasks at generation %d", victimID, most, partitions, md.Generation)

	standbyAnswers := 0
	for key, n := range want {
		v, err := cl.Get(t.Context(), "count", []byte(key), client.ReadMaxLag(maxLag))
		if err != nil {
			t.Errorf("%s right after the kill, with max_lag %d: %v", key, maxLag, err)
			continue
		}
		var got int64
		if err := v.Decode(&got); err != nil || got != n {
			t.Errorf("%s right after the kill: %s from %s, want %d", key, v.Raw, v.ServedBy, n)
		}
		if v.ServedBy == victimID || v.Lag > maxLag {
			t.Errorf("%s answered by %s with lag %d", key, v.ServedBy, v.Lag)
		}
		if md.Tasks[v.Task].Active == victimID && v.Generation == md.Generation {
			if v.Role != "standby" {
				t.Errorf("%s (task %d of the killed active) answered at generation %d by %s as %s, want a standby", key, v.Task, v.Generation, v.ServedBy, v.Role)
			}
			standbyAnswers++
		}
	}
	if standbyAnswers == 0 {
		t.Errorf("no key of the killed instance's %d tasks was answered by a standby before the rebalance", most)
	}
	t.Logf("%d keys answered by standbys of the killed instance's tasks", standbyAnswers)
	checkScan(t, cl, want, "right after the kill", client.ReadMaxLag(maxLag))

	// The group notices the kill; the client follows the new generation and
	// the new actives answer without max_lag.
	kafkatest.Eventually(t, 2*time.Minute, "every key from an active of a later generation", func() bool {
		for key, n := range want {
			v, err := cl.Get(t.Context(), "count", []byte(key))
			var got int64
			if err != nil || v.Decode(&got) != nil || got != n || v.Role != "active" || v.Generation <= md.Generation {
				return false
			}
		}
		return true
	})
	if cl.Generation() <= md.Generation {
		t.Errorf("client routes with generation %d, not past %d", cl.Generation(), md.Generation)
	}
	checkScan(t, cl, want, "after the rebalance")
}

// settled reports whether md has an active and a standby for each of
// tasks tasks and no probing rebalance pending (read from /v1/metadata,
// which the client does not keep all of).
func settled(t *testing.T, endpoint, token string, md *assignor.Metadata, tasks int) bool {
	if len(md.Tasks) != tasks {
		return false
	}
	for _, tk := range md.Tasks {
		if tk.Active == "" || len(tk.Standby) != 1 {
			return false
		}
	}
	var doc struct {
		Generation int32 `json:"generation"`
		Probing    bool  `json:"probing_rebalance_needed"`
	}
	return getJSON(t, endpoint, token, "/v1/metadata", &doc) && !doc.Probing && doc.Generation == md.Generation
}

// caughtUp reports whether, at md's placement, every input record is
// committed, every key's count is committed by its task's active, and
// every task's standby holds what its active committed. The input offsets
// first: under at-least-once a commit writes the stores before it commits
// them, and an active killed in between would have its records counted
// again by the next. A standby's reported lag cannot say it holds the
// counts: it counts from the last changelog end the standby has seen,
// stale until its next fetch. Positions can: a commit waits for its
// changelog records to be acknowledged, so once every count reads
// committed, the changelog's end covers them all, and a standby whose own
// /v1/status reports a position (its checkpoint) at that end has applied
// them.
func caughtUp(t *testing.T, c *kafkatest.Cluster, adm *kadm.Client, app, input, token string, md *assignor.Metadata, ins []*proc, want map[string]int64) bool {
	offsets, err := adm.FetchOffsets(t.Context(), app)
	if err != nil || offsets.Error() != nil {
		return false
	}
	for p, end := range c.EndOffsets(input) {
		if o, ok := offsets.Lookup(input, p); !ok || o.At < end {
			return false
		}
	}
	_, seed := ins[0].started()
	for key, n := range want {
		var a struct {
			Value      int64  `json:"value"`
			Task       int32  `json:"task"`
			ServedBy   string `json:"served_by"`
			Role       string `json:"role"`
			Generation int32  `json:"generation"`
		}
		if !getJSON(t, seed, token, "/v1/stores/count/keys/"+key+"?isolation=committed", &a) ||
			a.Value != n || a.Role != "active" || a.Generation != md.Generation ||
			int(a.Task) >= len(md.Tasks) || a.ServedBy != md.Tasks[a.Task].Active {
			return false
		}
	}
	end := c.EndOffsets(app + "-count-changelog")
	standby := map[string]map[int32]int64{} // instance -> task -> its standby's position
	for _, p := range ins {
		id, hostport := p.started()
		var st struct {
			Replicas []struct {
				Store    string `json:"store"`
				Task     int32  `json:"task"`
				Role     string `json:"role"`
				Position int64  `json:"position"`
			} `json:"replicas"`
		}
		if !getJSON(t, hostport, token, "/v1/status", &st) {
			return false
		}
		standby[id] = map[int32]int64{}
		for _, r := range st.Replicas {
			if r.Store == "count" && r.Role == "standby" {
				standby[id][r.Task] = r.Position
			}
		}
	}
	for task, tk := range md.Tasks {
		at, ok := standby[tk.Standby[0]][int32(task)]
		if !ok || at < end[int32(task)] {
			return false
		}
	}
	return true
}

// getJSON reads path from the instance at hostport with token into dst,
// and reports whether it answered 200 with JSON.
func getJSON(t *testing.T, hostport, token, path string, dst any) bool {
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+hostport+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	return resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(dst) == nil
}

// checkScan pages through the whole store, 7 keys a page, and checks that
// every key comes once, in order, with its count.
func checkScan(t *testing.T, cl *client.Client, want map[string]int64, phase string, opts ...client.ReadOpt) {
	t.Helper()
	seen := map[string]bool{}
	last := ""
	for it, err := range cl.Scanner(t.Context(), "count", client.ScanRequest{Limit: 7}, opts...) {
		if err != nil {
			t.Errorf("scan %s: %v", phase, err)
			return
		}
		k := string(it.Key)
		var n int64
		if err := it.Decode(&n); err != nil || n != want[k] {
			t.Errorf("scan %s: %s = %s, want %d", phase, k, it.Raw, want[k])
		}
		if seen[k] || k <= last {
			t.Errorf("scan %s: %s after %s (seen before: %v)", phase, k, last, seen[k])
		}
		seen[k], last = true, k
	}
	if len(seen) != len(want) {
		t.Errorf("scan %s: %d keys, want %d", phase, len(seen), len(want))
	}
}
