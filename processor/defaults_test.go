package processor

import (
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/rackstream/rackstream/assignor/balancer"
	"github.com/rackstream/rackstream/codec"
	"github.com/rackstream/rackstream/state"
)

// TestZeroOptionMeansZero is the table of what a zero in each field of
// Options means: zero where zero is a setting, an error naming the field
// and its configuration key where it is not. No zero means "the default".
func TestZeroOptionMeansZero(t *testing.T) {
	topo := New("zero")
	NewInput(topo, "in", codec.Bytes(), codec.Bytes(), func(*Context, []byte, []byte) error { return nil })
	for _, tc := range []struct {
		field   string
		zero    func(*Options)
		wantErr string                // a part of NewRuntime's error, or ""
		means   func(*Runtime) string // what is wrong with an accepted zero, or ""
	}{
		{"Brokers", func(o *Options) { o.Brokers = nil }, "no brokers (bootstrap.servers)", nil},
		{"StateDir", func(o *Options) { o.StateDir = "" }, "no state directory (state.dir)", nil},
		{"CleanupDelay", func(o *Options) { o.CleanupDelay = 0 }, "", func(r *Runtime) string {
			return unless(r.opts.CleanupDelay == 0, "a zero cleanup delay (delete at the next cleanup) became a default")
		}},
		{"NumStandbyReplicas", func(o *Options) { o.Placement.NumStandbyReplicas = 0 }, "", nil},
		{"Capacity", func(o *Options) { o.Capacity = 0 }, "Capacity (num.stream.threads) 0: must be at least 1", nil},
		{"AcceptableRecoveryLag", func(o *Options) { o.Placement.AcceptableRecoveryLag = 0 }, "", func(r *Runtime) string {
			return unless(r.opts.Placement.AcceptableRecoveryLag == 0, "acceptable.recovery.lag=0 (only caught-up replicas) became a default")
		}},
		{"MaxWarmupReplicas", func(o *Options) { o.Placement.MaxWarmupReplicas = 0 }, "max.warmup.replicas: must be at least 1, got 0", nil},
		{"ProbingInterval", func(o *Options) { o.ProbingInterval = 0 }, "ProbingInterval (probing.rebalance.interval.ms) 0s: must be at least 1m0s", nil},
		{"Partitioner", func(o *Options) { o.Partitioner = nil }, "no Partitioner (partitioner)", nil},
		{"CacheMaxBytes", func(o *Options) { o.CacheMaxBytes = 0 }, "", func(r *Runtime) string {
			env := &taskEnv{topo: r.topo, opts: &r.opts, log: r.log, tasks: 4, ctx: t.Context()}
			return unless(newTask(env, 0, nil).cache == nil, "a zero record cache still caches")
		}},
		{"MemoryBytes", func(o *Options) { o.MemoryBytes = 0 }, "", func(r *Runtime) string {
			return unless(r.opts.CacheMaxBytes == DefaultOptions().CacheMaxBytes, "no memory budget still overrode the record cache")
		}},
		{"CommitInterval", func(o *Options) { o.CommitInterval = 0 }, "", func(r *Runtime) string {
			return unless(r.opts.CommitInterval == 0, "commit.interval.ms=0 (commit after every batch) became a default")
		}},
		{"ErrorPolicy", func(o *Options) { o.ErrorPolicy = "" }, `ErrorPolicy (processing.exception.handler) "": must be dlq, skip or fail`, nil},
		{"Retry.Attempts", func(o *Options) { o.Retry.Attempts = 0 }, "Retry.Attempts 0: must be at least 1", nil},
		{"Retry.Backoff", func(o *Options) { o.Retry.Backoff, o.Retry.MaxBackoff = 0, 0 }, "", func(r *Runtime) string {
			return unless(r.opts.Retry.wait(0) == 0 && r.opts.Retry.wait(3) == 0, "a zero backoff waits")
		}},
		{"DLQTopic", func(o *Options) { o.DLQTopic = "" }, "", func(r *Runtime) string {
			return unless(r.opts.DLQTopic == "zero-dlq", "an empty DLQTopic is not <application.id>-dlq: "+r.opts.DLQTopic)
		}},
		{"ReplicationFactor", func(o *Options) { o.ReplicationFactor = 0 }, "ReplicationFactor (replication.factor) 0: must be -1", nil},
		{"SessionTimeout", func(o *Options) { o.SessionTimeout = 0 }, "SessionTimeout (session.timeout.ms) 0s: must be positive", nil},
		{"HeartbeatInterval", func(o *Options) { o.HeartbeatInterval = 0 }, "HeartbeatInterval 0s: must be at least 1ms", nil},
		{"ShutdownTimeout", func(o *Options) { o.ShutdownTimeout = 0 }, "", func(r *Runtime) string {
			return unless(r.opts.ShutdownTimeout == 0, "shutdown.timeout.ms=0 (do not wait) became a default")
		}},
		{"RebuildBackoff", func(o *Options) { o.RebuildBackoff, o.MaxRebuildBackoff = 0, 0 }, "", func(r *Runtime) string {
			return unless(r.opts.RebuildBackoff == 0 && r.opts.MaxRebuildBackoff == 0, "a zero rebuild backoff waits")
		}},
		{"TopologyCheckInterval", func(o *Options) { o.TopologyCheckInterval = 0 }, "TopologyCheckInterval 0s: must be positive", nil},
		{"MaxPollRecords", func(o *Options) { o.MaxPollRecords = 0 }, "MaxPollRecords 0: must be at least 1", nil},
		{"TaskQueue", func(o *Options) { o.TaskQueue = 0 }, "TaskQueue 0: must be at least 1", nil},
		{"Logger", func(o *Options) { o.Logger = nil }, "", func(r *Runtime) string {
			return unless(r.opts.Logger != nil, "a nil logger stayed nil; it means slog.Default()")
		}},
		{"Registerer", func(o *Options) { o.Registerer = nil }, "", nil}, // metrics kept, not registered
	} {
		t.Run(tc.field, func(t *testing.T) {
			o := DefaultOptions()
			o.Brokers, o.StateDir = []string{"127.0.0.1:1"}, t.TempDir()
			tc.zero(&o)
			r, err := NewRuntime(topo, o)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("a zero %s: %v; want an error containing %q", tc.field, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("a zero %s is rejected: %v", tc.field, err)
			}
			if tc.means != nil {
				if why := tc.means(r); why != "" {
					t.Error(why)
				}
			}
		})
	}
}

// TestDefaultOptionsTakeTheLibrariesDefaults: the processor's defaults of
// the state and balancer settings are theirs, written once.
func TestDefaultOptionsTakeTheLibrariesDefaults(t *testing.T) {
	o, st, bal := DefaultOptions(), state.DefaultOptions(), balancer.DefaultSettings()
	if o.LevelDB != st.LevelDB || o.CleanupDelay != st.CleanupDelay || o.MemoryBytes != st.MemoryBytes {
		t.Errorf("state defaults %+v %v, state's %+v %v", o.LevelDB, o.CleanupDelay, st.LevelDB, st.CleanupDelay)
	}
	if !reflect.DeepEqual(o.Placement, bal.Placement) ||
		o.ProbingInterval != bal.ProbingInterval || o.HeartbeatInterval != bal.HeartbeatInterval {
		t.Errorf("balancer defaults differ from the balancer's: %+v", o)
	}
	if o.Capacity != runtime.NumCPU() || o.CommitInterval != 30*time.Second || o.ShutdownTimeout != 30*time.Second {
		t.Errorf("defaults %+v", o)
	}
	if err := o.LevelDB.Validate(); err != nil {
		t.Error(err)
	}
}

// TestAMemoryBudgetBoundsTheRecordCache: state.memory.bytes above 0
// bounds the record cache by its part of the budget (the stores' part is
// state's: memory.go): a larger statestore.cache.max.bytes gets the part, a
// smaller one, or 0 (off), stays; a negative budget is rejected.
func TestAMemoryBudgetBoundsTheRecordCache(t *testing.T) {
	topo := New("budget")
	NewInput(topo, "in", codec.Bytes(), codec.Bytes(), func(*Context, []byte, []byte) error { return nil })
	o := DefaultOptions()
	o.Brokers, o.StateDir = []string{"127.0.0.1:1"}, t.TempDir()
	for _, tc := range []struct{ cache, want int64 }{
		{1 << 30, state.RecordCacheBytes(64 << 20)}, // larger than the part: the part
		{1, 1},
		{0, 0}, // off stays off
	} {
		o.MemoryBytes, o.CacheMaxBytes = 64<<20, tc.cache
		r, err := NewRuntime(topo, o)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.opts.CacheMaxBytes; got != tc.want {
			t.Errorf("statestore.cache.max.bytes=%d under a 64 MiB budget: record cache %d, want %d", tc.cache, got, tc.want)
		}
	}
	o.MemoryBytes = -1
	if _, err := NewRuntime(topo, o); err == nil || !strings.Contains(err.Error(), "state.memory.bytes") {
		t.Errorf("a negative budget: %v; want an error naming state.memory.bytes", err)
	}
}

func unless(ok bool, why string) string {
	if ok {
		return ""
	}
	return why
}
