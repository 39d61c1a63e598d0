package service

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/codec"
	"github.com/rackstream/rackstream/config"
	"github.com/rackstream/rackstream/harness/kafkatest"
	"github.com/rackstream/rackstream/processor"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func load(t *testing.T, sets ...string) *config.Config {
	t.Helper()
	base := []string{"application.id=app", "bootstrap.servers=127.0.0.1:1", "http.listen=127.0.0.1:0", "state.dir=" + t.TempDir()}
	cfg, err := config.Load(config.Sources{Set: append(base, sets...)})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestNewRejectsWhatItCannotRun(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	other := processor.New("other")
	processor.NewInput(other, "in", codec.Bytes(), codec.Bytes(), func(*processor.Context, []byte, []byte) error { return nil })
	for _, tc := range []struct {
		name string
		cfg  *config.Config
		topo *processor.Topology
		want string
	}{
		{"no processor", load(t), nil, "set processor.type"},
		{"another application's topology", load(t), other, `topology is for application "other"`},
		{"port in use", load(t, "processor.type=count", "processor.input.topic=in", "http.listen="+busy.Addr().String()), nil, "http.listen " + busy.Addr().String()},
		{"output is input", load(t, "processor.type=count", "processor.input.topic=in", "processor.output.topic=in"), nil, "consume its own updates"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, err := New(Options{Config: tc.cfg, Topology: tc.topo, Logger: quiet})
			if err == nil {
				in.ln.Close()
				t.Fatal("New succeeded")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q lacks %q", err, tc.want)
			}
		})
	}
}

func TestEndpointIsTheListenerUnlessApplicationServerIsSet(t *testing.T) {
	cfg := load(t, "processor.type=latest", "processor.input.topic=in")
	in, err := New(Options{Config: cfg, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer in.ln.Close()
	if in.Endpoint() != in.Addr().String() || !strings.HasPrefix(in.Endpoint(), "127.0.0.1:") {
		t.Errorf("endpoint %q, listener %s", in.Endpoint(), in.Addr())
	}
	if got := in.Stores(); len(got) != 1 || got[0] != "latest" {
		t.Errorf("stores %v", got)
	}
	cfg = load(t, "processor.type=latest", "processor.input.topic=in", "application.server=rs-0.rs.svc:8080")
	in2, err := New(Options{Config: cfg, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer in2.ln.Close()
	if in2.Endpoint() != "rs-0.rs.svc:8080" {
		t.Errorf("endpoint %q, want application.server", in2.Endpoint())
	}
}

func TestRunFailsAtStartupWhenNoBrokerAnswers(t *testing.T) {
	// A listener that accepts and closes: a port nobody serves Kafka on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cfg := load(t, "processor.type=count", "processor.input.topic=in", "bootstrap.servers="+addr)
	in, err := New(Options{Config: cfg, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	err = in.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), addr) {
		t.Fatalf("Run: %v; want an error naming %s", err, addr)
	}
	if err := in.Run(ctx); err == nil {
		t.Error("a second Run succeeded")
	}
}

func TestRunFailsAtStartupOnRefusedSASLLogin(t *testing.T) {
	fc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.EnableSASL(),
		kfake.Superuser("PLAIN", "admin", "right"))
	if err != nil {
		t.Fatal(err)
	}
	defer fc.Close()
	cfg := load(t, "processor.type=count", "processor.input.topic=in",
		"bootstrap.servers="+fc.ListenAddrs()[0],
		"security.protocol=SASL_PLAINTEXT", "sasl.mechanism=PLAIN",
		"sasl.username=admin", "sasl.password=wrong-secret")
	in, err := New(Options{Config: cfg, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	err = in.Run(t.Context())
	if err == nil || !strings.Contains(err.Error(), "PLAIN") || !strings.Contains(err.Error(), fc.ListenAddrs()[0]) {
		t.Fatalf("Run: %v; want a refusal naming PLAIN and the broker", err)
	}
	if strings.Contains(err.Error(), "wrong-secret") {
		t.Errorf("the error shows the password: %v", err)
	}
	if errors.Is(err, context.Canceled) {
		t.Errorf("cancelled instead of refused: %v", err)
	}
}

// TestRecordCacheSettingReachesTheRuntime runs the count processor with an
// output topic on 60 records of one key, with statestore.cache.max.bytes on
// and off, and a commit interval longer than the test so that the only
// flush is the one before the shutdown commit. With the cache the updates
// of the key are merged before they reach the output (fewer records than
// updates, the last one the final count); without it every update goes out.
func TestRecordCacheSettingReachesTheRuntime(t *testing.T) {
	const updates = 60
	for _, tc := range []struct {
		name  string
		cache string
		check func(n int) bool
		want  string
	}{
		{"a cache merges a key's updates before they reach the output", "10485760", func(n int) bool { return n < updates }, "fewer than 60"},
		{"no cache emits every update", "0", func(n int) bool { return n == updates }, "60"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := kafkatest.New(t)
			in, out := c.Name("cache-in"), c.Name("cache-out")
			c.CreateTopic(in, 1, nil)
			c.CreateTopic(out, 1, nil)
			var recs []*kgo.Record
			for range updates {
				recs = append(recs, &kgo.Record{Topic: in, Key: []byte("k"), Value: []byte("x")})
			}
			c.Produce(recs...)
			cfg := load(t, "application.id="+c.Name("cache"), "bootstrap.servers="+strings.Join(c.Brokers, ","),
				"processor.type=count", "processor.input.topic="+in, "processor.output.topic="+out,
				"statestore.cache.max.bytes="+tc.cache, "commit.interval.ms=3600000",
				"session.timeout.ms=6000", "replication.factor=1")
			inst, err := New(Options{Config: cfg, Logger: quiet, ClientOpts: c.ClientOpts()})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- inst.Run(ctx) }()
			// Queries read committed state, so the processed-records
			// counter tells when every update is in.
			kafkatest.Eventually(t, time.Minute, "60 records processed", func() bool {
				select {
				case err := <-done:
					t.Fatalf("Run returned early: %v", err)
				default:
				}
				fams, err := inst.Registry().Gather()
				if err != nil {
					t.Fatal(err)
				}
				var n float64
				for _, f := range fams {
					if f.GetName() == "rackstream_process_records_total" {
						for _, m := range f.GetMetric() {
							n += m.GetCounter().GetValue()
						}
					}
				}
				return n >= updates
			})
			cancel()
			if err := <-done; err != nil {
				t.Fatalf("Run: %v", err)
			}
			var values []string
			for _, r := range c.ConsumeAll(out) {
				if string(r.Key) == "k" {
					values = append(values, string(r.Value))
				}
			}
			if !tc.check(len(values)) || len(values) == 0 || values[len(values)-1] != "60" {
				t.Fatalf("output of k: %d records ending %q; want %s ending with the final count 60", len(values), values[max(0, len(values)-1):], tc.want)
			}
			t.Logf("%d updates of k, %d output records", updates, len(values))
		})
	}
}

// runInstance starts inst, returning a stop that cancels it and waits for a
// clean end; the test fails if Run ends before.
func runInstance(t *testing.T, inst *Instance) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- inst.Run(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
	t.Cleanup(stop)
	return stop
}

// TestClientIDsCarryTheInstanceOnceItIsKnown: the group member's client
// id, as the broker reports it, is <application.id>-<process id>-group, so
// that the brokers' logs and quotas tell the instances apart.
func TestClientIDsCarryTheInstanceOnceItIsKnown(t *testing.T) {
	c := kafkatest.New(t)
	in, app := c.Name("cid-in"), c.Name("cid")
	c.CreateTopic(in, 2, nil)
	cfg := load(t, "application.id="+app, "bootstrap.servers="+strings.Join(c.Brokers, ","),
		"processor.type=count", "processor.input.topic="+in, "session.timeout.ms=6000", "replication.factor=1")
	inst, err := New(Options{Config: cfg, Logger: quiet, ClientOpts: c.ClientOpts()})
	if err != nil {
		t.Fatal(err)
	}
	runInstance(t, inst)
	var got []string
	kafkatest.Eventually(t, time.Minute, "the group's member described", func() bool {
		pid := inst.Runtime().ProcessID()
		gs, err := c.Admin().DescribeGroups(t.Context(), app)
		if err != nil || pid == "" {
			return false
		}
		got = got[:0]
		for _, m := range gs[app].Members {
			got = append(got, m.ClientID)
		}
		return len(got) == 1 && got[0] == app+"-"+pid+"-group"
	})
}

// TestStateCleanupDelayDeletesTheStoresOfATaskMovedAway: with
// state.cleanup.delay.ms=1000, the stores of a task that moved to a second
// instance are deleted from the first one's state directory (the runtime's
// default, 10 minutes, would keep them through the test).
func TestStateCleanupDelayDeletesTheStoresOfATaskMovedAway(t *testing.T) {
	c := kafkatest.New(t)
	in, app := c.Name("cleanup-in"), c.Name("cleanup")
	c.CreateTopic(in, 4, nil)
	var recs []*kgo.Record
	for i := range 40 {
		recs = append(recs, &kgo.Record{Topic: in, Key: []byte("k" + strconv.Itoa(i)), Value: []byte("x")})
	}
	c.Produce(recs...)
	newInstance := func() (*Instance, *config.Config) {
		cfg := load(t, "application.id="+app, "bootstrap.servers="+strings.Join(c.Brokers, ","),
			"processor.type=count", "processor.input.topic="+in, "commit.interval.ms=100",
			"state.cleanup.delay.ms=1000", "session.timeout.ms=6000", "replication.factor=1")
		inst, err := New(Options{Config: cfg, Logger: quiet, ClientOpts: c.ClientOpts()})
		if err != nil {
			t.Fatal(err)
		}
		return inst, cfg
	}
	first, cfg := newInstance()
	runInstance(t, first)
	taskDir := func(task int32) string { return filepath.Join(cfg.StateDir, app, strconv.Itoa(int(task))) }
	kafkatest.Eventually(t, time.Minute, "the first instance holds the stores of every task", func() bool {
		for task := range int32(4) {
			if _, err := os.Stat(taskDir(task)); err != nil {
				return false
			}
		}
		return true
	})
	second, _ := newInstance()
	runInstance(t, second)
	kafkatest.Eventually(t, time.Minute, "the stores of a task moved away deleted on the first instance", func() bool {
		for task := range int32(4) {
			if _, held := first.Runtime().Replica(task); held {
				continue
			}
			if _, err := os.Stat(taskDir(task)); errors.Is(err, os.ErrNotExist) {
				return true
			}
		}
		return false
	})
}
