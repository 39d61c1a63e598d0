package state

import (
	"context"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/rackstream/rackstream/harness/kafkatest"
	"github.com/twmb/franz-go/pkg/kgo"
)

// testLogger writes the package's logs to the test log.
func testLogger(t testing.TB) *slog.Logger {
	if os.Getenv("STATE_TEST_LOGS") == "" {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }

// env is one test's cluster and application.
type env struct {
	t      testing.TB
	c      *kafkatest.Cluster
	app    string
	tasks  int32
	stores []StoreSpec
}

func newEnv(t testing.TB, tasks int32, stores ...string) *env {
	t.Helper()
	c := kafkatest.New(t)
	e := &env{t: t, c: c, app: c.Name("state-test"), tasks: tasks}
	for _, s := range stores {
		e.stores = append(e.stores, StoreSpec{Name: s})
	}
	return e
}

func (e *env) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	e.t.Cleanup(cancel)
	return ctx
}

// open opens a Manager on dir for the env's application and ensures the
// changelogs exist.
func (e *env) open(dir string, mods ...func(*Options)) *Manager {
	e.t.Helper()
	o := DefaultOptions()
	o.Dir, o.ApplicationID = dir, e.app
	o.ClientOpts = []kgo.Opt{kgo.SeedBrokers(e.c.Brokers...)}
	o.Logger = testLogger(e.t)
	for _, m := range mods {
		m(&o)
	}
	m, err := Open(o)
	if err != nil {
		e.t.Fatalf("open state: %v", err)
	}
	e.t.Cleanup(func() { m.Close() })
	if err := m.EnsureChangelogs(e.ctx(), e.tasks, 1, e.stores); err != nil {
		e.t.Fatalf("ensure changelogs: %v", err)
	}
	return m
}

// producer returns a client fit to produce changelog records.
func (e *env) producer(opts ...kgo.Opt) *kgo.Client {
	return e.c.Client(append([]kgo.Opt{
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(0),
	}, opts...)...)
}

// activeTask opens task id, restores it and activates it with p.
func (e *env) activeTask(m *Manager, id int32, p *kgo.Client) *Task {
	e.t.Helper()
	task, err := m.OpenTask(id, e.stores)
	if err != nil {
		e.t.Fatalf("open task %d: %v", id, err)
	}
	if err := task.Restore(e.ctx()); err != nil {
		e.t.Fatalf("restore task %d: %v", id, err)
	}
	if err := task.Activate(p); err != nil {
		e.t.Fatalf("activate task %d: %v", id, err)
	}
	return task
}

// commit flushes p and commits task.
func (e *env) commit(task *Task, p *kgo.Client) {
	e.t.Helper()
	if err := p.Flush(e.ctx()); err != nil {
		e.t.Fatalf("flush: %v", err)
	}
	if err := task.Commit(); err != nil {
		e.t.Fatalf("commit task %d: %v", task.ID(), err)
	}
}

// viewContent returns a store's committed content.
func viewContent(t testing.TB, v *CommittedView) map[string]string {
	t.Helper()
	out := make(map[string]string)
	if err := v.Scan(nil, nil, func(k, val []byte) bool {
		out[string(k)] = string(val)
		return true
	}); err != nil {
		t.Fatalf("scan: %v", err)
	}
	return out
}

// changelogContent reads a changelog partition to its end and folds it
// into the key-value content it describes.
func (e *env) changelogContent(topic string, partition int32) map[string]string {
	content, _, _ := e.readChangelog(topic, partition)
	return content
}

// readChangelog reads a changelog partition to its end offset (read
// committed), returning the content it describes, how many data records it
// holds, and the end offset.
func (e *env) readChangelog(topic string, partition int32) (content map[string]string, records int, end int64) {
	e.t.Helper()
	ctx := e.ctx()
	ends, err := e.c.Admin().ListEndOffsets(ctx, topic)
	if err != nil {
		e.t.Fatalf("list end offsets: %v", err)
	}
	lo, _ := ends.Lookup(topic, partition)
	content = make(map[string]string)
	if lo.Offset == 0 {
		return content, 0, 0
	}
	cl := e.c.Client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		topic: {partition: kgo.NewOffset().AtStart()},
	}), kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())
	defer cl.Close()
	for {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			e.t.Fatalf("read changelog %s/%d: %v", topic, partition, err)
		}
		done := false
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset+1 >= lo.Offset {
				done = true
			}
			if r.Attrs.IsControl() {
				return
			}
			records++
			if r.Value == nil {
				delete(content, string(r.Key))
			} else {
				content[string(r.Key)] = string(r.Value)
			}
		})
		if done {
			return content, records, lo.Offset
		}
	}
}
