package deploy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/assignor/balancer"
	"github.com/rackstream/rackstream/config"
	"github.com/rackstream/rackstream/harness/kafkatest"
	"github.com/rackstream/rackstream/partition"
	"github.com/rackstream/rackstream/service"
)

// eventOnly are the labelled families a healthy instance has no series of
// until the event they count happens: the registry describes them (checked),
// a scrape shows them only after the first event. Everything else the deploy
// files or issue 8 name must be on a live /metrics page.
var eventOnly = map[string]string{
	"rackstream_skipped_records_total":        "poison records skipped under processing.exception.handler=skip (the instances run dlq)",
	"rackstream_state_corrupted_stores_total": "a corrupted store moved aside at open",
}

// issue8Metrics is issue 8's Metrics list, each item with the family that
// exports it, its type and its labels.
var issue8Metrics = []struct {
	what   string
	name   string
	kind   dto.MetricType
	labels []string
}{
	{"records processed per task", "rackstream_process_records_total", dto.MetricType_COUNTER, []string{"task"}},
	{"processing latency per task", "rackstream_process_latency_seconds", dto.MetricType_HISTOGRAM, []string{"task"}},
	{"consumer lag per partition", "rackstream_consumer_lag_records", dto.MetricType_GAUGE, []string{"partition", "topic"}},
	{"commit latency", "rackstream_commit_latency_seconds", dto.MetricType_HISTOGRAM, nil},
	{"commit failures", "rackstream_commit_failures_total", dto.MetricType_COUNTER, nil},
	{"restore records remaining", "rackstream_state_restore_remaining_records", dto.MetricType_GAUGE, []string{"store", "task"}},
	{"restored records", "rackstream_state_restored_records_total", dto.MetricType_COUNTER, []string{"store", "task"}},
	{"standby lag per task", "rackstream_state_lag_records", dto.MetricType_GAUGE, []string{"store", "task"}},
	{"rebalances", "rackstream_rebalances_total", dto.MetricType_COUNTER, nil},
	{"rebalance duration", "rackstream_rebalance_duration_seconds", dto.MetricType_HISTOGRAM, nil},
	{"active, standby and warmup tasks on this instance", "rackstream_tasks", dto.MetricType_GAUGE, []string{"role"}},
	{"placement quality per tag dimension", "rackstream_placement_tasks_repeating", dto.MetricType_GAUGE, []string{"tag"}},
	{"tasks with fewer standbys than configured", "rackstream_placement_tasks_short_of_standbys", dto.MetricType_GAUGE, nil},
	{"dead-lettered records", "rackstream_dead_letter_records_total", dto.MetricType_COUNTER, []string{"stage", "task"}},
	{"client rebuilds", "rackstream_client_rebuilds_total", dto.MetricType_COUNTER, nil},
	{"HTTP requests by route and code", "rackstream_http_requests_total", dto.MetricType_COUNTER, []string{"code", "route"}},
	{"HTTP request latency", "rackstream_http_request_duration_seconds", dto.MetricType_HISTOGRAM, []string{"route"}},
}

// TestMetricsOnALiveInstance runs real instances (the built-in sum
// processor, num.standby.replicas=1, on kfake or the real broker) through
// what the metrics count, scrapes their /metrics pages, and checks that
// every rackstream_* name the alert rules, the scrape config, the dashboard
// and deploy/README.md use, and every metric of issue 8's list, is exported
// with its type and labels.
//
// The life: instance A alone processes records, one of them poison (dead
// lettered); A stops. B and C, with empty state directories, restore A's
// stores from the changelogs as the plan makes them actives or standbys
// (every task has one of each), more records arrive, and every key is read
// through both (each forwards what the other owns). The union of the three
// scrapes must hold each name; a family only described (registered, no
// series yet) passes only when eventOnly says why.
func TestMetricsOnALiveInstance(t *testing.T) {
	got := liveMetrics(t)

	t.Run("deploy files", func(t *testing.T) {
		used := usedMetricNames(t)
		names := make([]string, 0, len(used))
		for m := range used {
			names = append(names, m)
		}
		sort.Strings(names)
		for _, m := range names {
			fam, isSeries := got.series[m]
			switch {
			case isSeries && got.families[fam].GetType() != dto.MetricType_HISTOGRAM,
				isSeries && fam != m:
			case got.families[m].GetType() == dto.MetricType_HISTOGRAM && len(got.families[m].GetMetric()) > 0:
				// A histogram's family: documentation may name it, a query
				// must name a series.
				for _, f := range used[m] {
					if !strings.HasSuffix(f, ".md") {
						t.Errorf("%s (in %s) is a histogram: query %s_bucket, _sum or _count", m, f, m)
					}
				}
			case got.described[m] != nil && eventOnly[m] != "":
				t.Logf("%s (in %v): registered, no series until the first event (%s)", m, used[m], eventOnly[m])
			case eventOnly[m] != "" && definedInSource(t, m):
				// Collected at scrape time from live objects (the processor's
				// per-task series): nothing describes it until it has a series.
				t.Logf("%s (in %v): collected from live tasks, no series until the first event (%s)", m, used[m], eventOnly[m])
			case got.described[m] != nil:
				t.Errorf("%s (in %v) is registered but has no series after the instances processed, restored, kept standbys and answered queries", m, used[m])
			default:
				t.Errorf("%s (in %v) is not exported", m, used[m])
			}
		}
	})

	t.Run("forwarded queries", func(t *testing.T) {
		var ok float64
		for _, m := range got.families["rackstream_http_forwards_total"].GetMetric() {
			if labelValue(m, "result") == "ok" {
				ok += m.GetCounter().GetValue()
			}
		}
		if ok == 0 {
			t.Error("rackstream_http_forwards_total{result=\"ok\"} is 0 although every key was read through both instances")
		}
	})

	t.Run("issue 8", func(t *testing.T) {
		for _, want := range issue8Metrics {
			fam := got.families[want.name]
			if fam == nil {
				if labels, ok := got.described[want.name]; ok && eventOnly[want.name] != "" {
					if !slices.Equal(labels, want.labels) {
						t.Errorf("%s (%s): labels %v, want %v", want.what, want.name, labels, want.labels)
					}
					continue
				}
				t.Errorf("%s: %s not exported", want.what, want.name)
				continue
			}
			if fam.GetType() != want.kind {
				t.Errorf("%s: %s is a %v, want a %v", want.what, want.name, fam.GetType(), want.kind)
			}
			for _, m := range fam.GetMetric() {
				if l := labelNames(m); !slices.Equal(l, want.labels) {
					t.Errorf("%s: %s has a series labelled %v, want %v", want.what, want.name, l, want.labels)
					break
				}
			}
		}
		// Per task: every task processed records and has a standby.
		for _, name := range []string{"rackstream_process_records_total", "rackstream_state_lag_records"} {
			tasks := map[string]bool{}
			for _, m := range got.families[name].GetMetric() {
				tasks[labelValue(m, "task")] = true
			}
			for task := range liveTasks {
				if !tasks[strconv.Itoa(task)] {
					t.Errorf("%s has no series for task %d: %v", name, task, tasks)
				}
			}
		}
		roles := map[string]bool{}
		for _, m := range got.families["rackstream_tasks"].GetMetric() {
			roles[labelValue(m, "role")] = true
		}
		for _, r := range []string{"active", "standby", "warmup"} {
			if !roles[r] {
				t.Errorf("rackstream_tasks has no series for role %s", r)
			}
		}
		tags := map[string]bool{}
		for _, m := range got.families["rackstream_placement_tasks_repeating"].GetMetric() {
			tags[labelValue(m, "tag")] = true
		}
		if len(tags) != 1 || !tags["zone"] {
			t.Errorf("rackstream_placement_tasks_repeating for tags %v, want zone only (rack.aware.assignment.tags)", tags)
		}
		var dead float64
		for _, m := range got.families["rackstream_dead_letter_records_total"].GetMetric() {
			dead += m.GetCounter().GetValue()
		}
		if dead < 1 {
			t.Errorf("rackstream_dead_letter_records_total sums to %v; a poison record was processed", dead)
		}
	})
}

// live is what the scrapes of the instances showed.
type live struct {
	families  map[string]*dto.MetricFamily // the union of the scrapes, by family
	series    map[string]string            // series name (a histogram's _bucket, _sum, _count) -> family
	described map[string][]string          // every family the registries describe -> its variable labels, sorted
}

const (
	liveTasks = 4
	liveKeys  = 12
)

func liveMetrics(t *testing.T) *live {
	c := kafkatest.New(t)
	app := c.Name("deploy-metrics")
	input := c.Name("deploy-metrics-in")
	c.CreateTopic(input, liveTasks, nil)
	dir := t.TempDir()
	base := []string{
		"application.id=" + app,
		"bootstrap.servers=" + strings.Join(c.Brokers, ","),
		"processor.type=sum",
		"processor.input.topic=" + input,
		"num.standby.replicas=1",
		"rack.aware.assignment.tags=zone",
		"http.listen=127.0.0.1:0",
		"commit.interval.ms=100",
		"statestore.cache.max.bytes=0",
		"session.timeout.ms=6000",
		"shutdown.timeout.ms=15000",
		"replication.factor=1",
		"num.stream.threads=1",
	}
	startInstance := func(name string) *liveInstance {
		cfg, err := config.Load(config.Sources{Set: append(slices.Clone(base),
			"client.tag.zone=zone-"+name, "state.dir="+filepath.Join(dir, name))})
		if err != nil {
			t.Fatal(err)
		}
		logs := &syncBuffer{}
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("instance %s's log:\n%s", name, logs.String())
			}
		})
		svc, err := service.New(service.Options{Config: cfg, Logger: slog.New(slog.NewTextHandler(logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		in := &liveInstance{name: name, svc: svc, cancel: cancel, done: make(chan struct{})}
		go func() {
			defer close(in.done)
			in.err = svc.Run(ctx)
		}()
		t.Cleanup(in.stop)
		return in
	}

	cl := c.Client(kgo.RecordPartitioner(partition.Kgo(partition.Murmur2())))
	sums := map[string]int{}
	produce := func(round int) {
		var recs []*kgo.Record
		for k := range liveKeys {
			key := "key-" + strconv.Itoa(k)
			sums[key] += round
			recs = append(recs, &kgo.Record{Topic: input, Key: []byte(key), Value: []byte(strconv.Itoa(round))})
		}
		if err := cl.ProduceSync(t.Context(), recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// everySum reports whether every key reads its sum through in.
	var problem string // why everySum last returned false
	t.Cleanup(func() {
		if t.Failed() && problem != "" {
			t.Log("last wait:", problem)
		}
	})
	everySum := func(in *liveInstance) bool {
		for key, want := range sums {
			var ans struct{ Value json.RawMessage }
			url := "http://" + in.svc.Addr().String() + "/v1/stores/sum/keys/" + key
			if code := getJSON(t, url, &ans); code != 200 || string(ans.Value) != strconv.Itoa(want) {
				problem = fmt.Sprintf("%s: %d %s, want %d", url, code, ans.Value, want)
				return false
			}
		}
		problem = ""
		return true
	}

	got := &live{families: map[string]*dto.MetricFamily{}, described: map[string][]string{}}
	a := startInstance("a")
	kafkatest.Eventually(t, 2*time.Minute, "a ready", a.ready)
	produce(1)
	produce(2)
	if err := cl.ProduceSync(t.Context(), &kgo.Record{Topic: input, Key: []byte("poison"), Value: []byte("not a number")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	kafkatest.Eventually(t, time.Minute, "every sum on a", func() bool { return everySum(a) })
	kafkatest.Eventually(t, time.Minute, "the poison record dead-lettered", func() bool {
		f := a.scrape(t)["rackstream_dead_letter_records_total"]
		return f != nil && len(f.GetMetric()) > 0
	})
	got.add(t, a)
	a.stop()
	if a.err != nil {
		t.Fatalf("a: %v", a.err)
	}

	b, cc := startInstance("b"), startInstance("c")
	kafkatest.Eventually(t, 2*time.Minute, "b and c ready, every task with an active and a standby", func() bool {
		if !b.ready() || !cc.ready() {
			return false
		}
		p := b.svc.Runtime().Placement()
		if p == nil || len(p.Members) != 2 {
			return false
		}
		for _, r := range p.Tasks {
			if r.Active == balancer.NoMember || len(r.Standbys) != 1 {
				return false
			}
		}
		return true
	})
	produce(3) // the standbys tail it from the changelogs
	kafkatest.Eventually(t, time.Minute, "every sum through b and through c (each forwards to the other's actives)", func() bool {
		return everySum(b) && everySum(cc)
	})
	kafkatest.Eventually(t, time.Minute, "c caught up with the changelogs", func() bool {
		sum := func(f *dto.MetricFamily, v func(*dto.Metric) float64) (n float64, series int) {
			for _, m := range f.GetMetric() {
				n += v(m)
			}
			return n, len(f.GetMetric())
		}
		fams := cc.scrape(t)
		lag, n := sum(fams["rackstream_state_lag_records"], func(m *dto.Metric) float64 { return m.GetGauge().GetValue() })
		restored, _ := sum(fams["rackstream_state_restored_records_total"], func(m *dto.Metric) float64 { return m.GetCounter().GetValue() })
		return n > 0 && lag == 0 && restored > 0
	})
	got.add(t, b)
	got.add(t, cc)
	got.series = exportedSeriesOf(got.families)
	return got
}

// liveInstance is one service.Instance the test runs.
type liveInstance struct {
	name   string
	svc    *service.Instance
	cancel context.CancelFunc
	done   chan struct{}
	err    error
	once   sync.Once
}

func (in *liveInstance) ready() bool { ok, _ := in.svc.Ready(); return ok }

// stop shuts the instance down gracefully and waits for it.
func (in *liveInstance) stop() {
	in.once.Do(func() {
		in.cancel()
		<-in.done
	})
}

// syncBuffer is an instance's log, kept to show when the test fails.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// scrape reads the instance's /metrics page over HTTP.
func (in *liveInstance) scrape(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get("http://" + in.svc.Addr().String() + "/metrics")
	if err != nil {
		t.Fatalf("%s: scrape: %v", in.name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("%s: /metrics answered %s", in.name, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("%s: /metrics: %v", in.name, err)
	}
	return fams
}

// add merges a scrape of in and the families its registry describes.
func (l *live) add(t *testing.T, in *liveInstance) {
	t.Helper()
	for name, f := range in.scrape(t) {
		if have := l.families[name]; have != nil {
			have.Metric = append(have.Metric, f.Metric...)
		} else {
			l.families[name] = f
		}
	}
	for name, labels := range describe(in.svc.Registry()) {
		l.described[name] = labels
	}
}

// definedInSource reports whether a non-test Go file of the module names
// the metric family as a string literal: how an event-only family that an
// unchecked collector gathers from live objects is known to exist.
func definedInSource(t *testing.T, name string) bool {
	t.Helper()
	found := false
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil || found {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		found = bytes.Contains(b, []byte(`"`+name+`"`))
		return nil
	})
	if err != nil {
		t.Fatalf("looking for %s in the sources: %v", name, err)
	}
	return found
}

var descRE = regexp.MustCompile(`fqName: "([^"]*)".*variableLabels: \{([^}]*)\}`)

// describe returns every family r's collectors describe, with its variable
// labels: the families with no series yet included.
func describe(r *prometheus.Registry) map[string][]string {
	ch := make(chan *prometheus.Desc)
	go func() {
		r.Describe(ch)
		close(ch)
	}()
	out := map[string][]string{}
	for d := range ch {
		m := descRE.FindStringSubmatch(d.String())
		if m == nil {
			continue
		}
		var labels []string
		if m[2] != "" {
			labels = strings.Split(m[2], ",")
		}
		sort.Strings(labels)
		out[m[1]] = labels
	}
	return out
}

// exportedSeriesOf maps each series name a scrape shows to its family.
func exportedSeriesOf(fams map[string]*dto.MetricFamily) map[string]string {
	kinds := map[string]metricKind{}
	for name, f := range fams {
		switch f.GetType() {
		case dto.MetricType_HISTOGRAM:
			kinds[name] = histogram
		case dto.MetricType_SUMMARY:
			kinds[name] = summary
		default:
			kinds[name] = gauge
		}
	}
	return exportedSeries(kinds)
}

func labelNames(m *dto.Metric) []string {
	var out []string
	for _, l := range m.GetLabel() {
		out = append(out, l.GetName())
	}
	sort.Strings(out)
	return out
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// getJSON GETs url and decodes a 200 answer into v, returning the status
// (0 when the request failed).
func getJSON(t *testing.T, url string, v any) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			t.Errorf("%s: %v", url, err)
		}
	}
	return resp.StatusCode
}

// usedMetricNames returns every rackstream_* name in the observability
// files, with the files using it.
func usedMetricNames(t *testing.T) map[string][]string {
	t.Helper()
	used := map[string][]string{}
	for _, f := range observabilityFiles(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range metricRef.FindAllString(string(b), -1) {
			if !slices.Contains(used[m], f) {
				used[m] = append(used[m], f)
			}
		}
	}
	if len(used) == 0 {
		t.Fatal("no rackstream_ metric names found in the files: the scan is broken")
	}
	return used
}
