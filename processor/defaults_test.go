package processor

import (
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/rackstream/rackstream/assignor"
	"github.com/rackstream/rackstream/assignor/balancer"
	"github.com/rackstream/rackstream/codec"
	"github.com/rackstream/rackstream/state"
)

func zeroTopology() *Topology {
	topo := New("zero")
	NewInput(topo, "in", codec.Bytes(), codec.Bytes(), func(*Context, []byte, []byte) error { return nil })
	return topo
}

// minimal are the options a user must set: everything else is left zero.
func minimal(t *testing.T) Options {
	return Options{Brokers: []string{"127.0.0.1:1"}, StateDir: t.TempDir()}
}

// TestMinimalOptionsAreAccepted: Brokers and StateDir are all NewRuntime
// needs; with NumStandbyReplicas set too, the rest takes the defaults.
func TestMinimalOptionsAreAccepted(t *testing.T) {
	o := minimal(t)
	o.Placement.NumStandbyReplicas = 1
	r, err := NewRuntime(zeroTopology(), o)
	if err != nil {
		t.Fatalf("NewRuntime of the minimal options: %v", err)
	}
	want := DefaultOptions()
	want.Brokers, want.StateDir, want.Placement.NumStandbyReplicas = o.Brokers, o.StateDir, 1
	want.DLQTopic, want.Logger = "zero-dlq", r.opts.Logger
	if got := r.Partitioner().Name(); got != want.Partitioner.Name() {
		t.Errorf("partitioner %s, want the default", got)
	}
	want.Partitioner, r.opts.Partitioner = nil, nil // funcs: compared by name above
	if !reflect.DeepEqual(r.opts, want) {
		t.Errorf("resolved options\n %+v\nwant the defaults\n %+v", r.opts, want)
	}
}

// TestZeroOptionTakesItsDefault is the table of what each field of
// Options means at its zero value (its default) and, where zero is a
// setting of its own, at Zero (zero).
func TestZeroOptionTakesItsDefault(t *testing.T) {
	d := DefaultOptions()
	for _, tc := range []struct {
		field string
		get   func(*Options) any
		set   func(*Options, int) // nil: zero is not a setting of this field
		def   any
	}{
		{"LevelDB.BlockCacheBytes", func(o *Options) any { return o.LevelDB.BlockCacheBytes },
			func(o *Options, v int) { o.LevelDB.BlockCacheBytes = v }, d.LevelDB.BlockCacheBytes},
		{"LevelDB.WriteBufferBytes", func(o *Options) any { return o.LevelDB.WriteBufferBytes }, nil, d.LevelDB.WriteBufferBytes},
		{"LevelDB.BloomBits", func(o *Options) any { return o.LevelDB.BloomBits },
			func(o *Options, v int) { o.LevelDB.BloomBits = v }, d.LevelDB.BloomBits},
		{"MemoryBytes", func(o *Options) any { return o.MemoryBytes },
			func(o *Options, v int) { o.MemoryBytes = int64(v) }, d.MemoryBytes},
		{"CleanupDelay", func(o *Options) any { return o.CleanupDelay },
			func(o *Options, v int) { o.CleanupDelay = time.Duration(v) }, d.CleanupDelay},
		{"Placement.NumStandbyReplicas", func(o *Options) any { return o.Placement.NumStandbyReplicas },
			func(o *Options, v int) { o.Placement.NumStandbyReplicas = v }, 0},
		{"Placement.AcceptableRecoveryLag", func(o *Options) any { return o.Placement.AcceptableRecoveryLag },
			func(o *Options, v int) { o.Placement.AcceptableRecoveryLag = int64(v) }, int64(assignor.DefaultAcceptableRecoveryLag)},
		{"Placement.MaxWarmupReplicas", func(o *Options) any { return o.Placement.MaxWarmupReplicas }, nil, assignor.DefaultMaxWarmupReplicas},
		{"Capacity", func(o *Options) any { return o.Capacity }, nil, runtime.NumCPU()},
		{"ProbingInterval", func(o *Options) any { return o.ProbingInterval }, nil, balancer.DefaultProbingInterval},
		{"CacheMaxBytes", func(o *Options) any { return o.CacheMaxBytes },
			func(o *Options, v int) { o.CacheMaxBytes = int64(v) }, d.CacheMaxBytes},
		{"CommitInterval", func(o *Options) any { return o.CommitInterval },
			func(o *Options, v int) { o.CommitInterval = time.Duration(v) }, 30 * time.Second},
		{"Guarantee", func(o *Options) any { return o.Guarantee }, nil, AtLeastOnce},
		{"ErrorPolicy", func(o *Options) any { return o.ErrorPolicy }, nil, PolicyDeadLetter},
		{"DLQTopic", func(o *Options) any { return o.DLQTopic }, nil, "zero-dlq"},
		{"ReplicationFactor", func(o *Options) any { return o.ReplicationFactor }, nil, int16(-1)},
		{"ChangelogLeaders", func(o *Options) any { return o.ChangelogLeaders }, nil, ChangelogLeadersAligned},
		{"SessionTimeout", func(o *Options) any { return o.SessionTimeout }, nil, 10 * time.Second},
		{"ShutdownTimeout", func(o *Options) any { return o.ShutdownTimeout },
			func(o *Options, v int) { o.ShutdownTimeout = time.Duration(v) }, 30 * time.Second},
		{"MaxTaskIdle", func(o *Options) any { return o.MaxTaskIdle }, nil, time.Duration(0)},
		{"Logger", func(o *Options) any { return o.Logger != nil }, nil, true},
		{"retry", func(o *Options) any { return o.retry }, nil, DefaultRetry()},
		{"heartbeatInterval", func(o *Options) any { return o.heartbeatInterval }, nil, balancer.DefaultHeartbeatInterval},
		{"rebuildBackoff", func(o *Options) any { return o.rebuildBackoff },
			func(o *Options, v int) { o.rebuildBackoff = time.Duration(v) }, time.Second},
		{"maxRebuildBackoff", func(o *Options) any { return o.maxRebuildBackoff }, nil, 5 * time.Second},
		{"topologyCheckInterval", func(o *Options) any { return o.topologyCheckInterval }, nil, 30 * time.Second},
		{"maxPollRecords", func(o *Options) any { return o.maxPollRecords }, nil, 10000},
		{"taskQueue", func(o *Options) any { return o.taskQueue }, nil, 20000},
	} {
		t.Run(tc.field, func(t *testing.T) {
			r, err := NewRuntime(zeroTopology(), minimal(t))
			if err != nil {
				t.Fatal(err)
			}
			if got := tc.get(&r.opts); got != tc.def {
				t.Errorf("a zero %s is %v, want its default %v", tc.field, got, tc.def)
			}
			if tc.set == nil {
				return
			}
			o := minimal(t)
			tc.set(&o, Zero)
			if r, err = NewRuntime(zeroTopology(), o); err != nil {
				t.Fatalf("%s: Zero is rejected: %v", tc.field, err)
			}
			if got := reflect.ValueOf(tc.get(&r.opts)); !got.IsZero() {
				t.Errorf("%s: Zero is %v, want 0", tc.field, got)
			}
		})
	}
}

// TestOptionsOutOfRangeNameTheirKey: a value no default replaces is
// rejected, naming the field and its configuration key; every fault is
// reported at once.
func TestOptionsOutOfRangeNameTheirKey(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(*Options)
		want []string
	}{
		{"no brokers", func(o *Options) { o.Brokers = nil }, []string{"no brokers (bootstrap.servers)"}},
		{"no state directory", func(o *Options) { o.StateDir = "" }, []string{"no state directory (state.dir)"}},
		{"negative capacity", func(o *Options) { o.Capacity = -2 }, []string{"Capacity (num.stream.threads) -2: must be at least 1"}},
		{"Zero where zero is no setting", func(o *Options) { o.Capacity = Zero }, []string{"Capacity (num.stream.threads) -1"}},
		{"a cache below Zero", func(o *Options) { o.CacheMaxBytes = -5 }, []string{"CacheMaxBytes (statestore.cache.max.bytes) -5: must be at least 0, or Zero"}},
		{"a lag below Zero", func(o *Options) { o.Placement.AcceptableRecoveryLag = -5 }, []string{"acceptable.recovery.lag: must be at least 0, got -5"}},
		{"a short probing interval", func(o *Options) { o.ProbingInterval = time.Second }, []string{"ProbingInterval (probing.rebalance.interval.ms) 1s"}},
		{"an unknown guarantee", func(o *Options) { o.Guarantee = "twice" }, []string{`Guarantee (processing.guarantee) "twice"`}},
		{"a long exactly-once commit", func(o *Options) { o.Guarantee, o.CommitInterval = ExactlyOnceV2, time.Hour }, []string{"CommitInterval (commit.interval.ms) 1h0m0s under ExactlyOnceV2"}},
		{"replication factor 0 spelt Zero", func(o *Options) { o.ReplicationFactor = -2 }, []string{"ReplicationFactor (replication.factor) -2"}},
		{"an unknown changelog placement", func(o *Options) { o.ChangelogLeaders = "rack" }, []string{`ChangelogLeaders (changelog.leader.alignment) "rack": must be aligned or broker`}},
		{"every fault at once", func(o *Options) { o.Brokers, o.Capacity, o.SessionTimeout = nil, -2, -time.Second }, []string{
			"bootstrap.servers", "num.stream.threads", "session.timeout.ms"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := minimal(t)
			tc.set(&o)
			_, err := NewRuntime(zeroTopology(), o)
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("%v; want an error containing %q", err, w)
				}
			}
		})
	}
}

// TestCommitIntervalDefaultFollowsTheGuarantee: under exactly-once a zero
// commit interval takes DefaultCommitIntervalExactlyOnce, below the
// transaction timeout.
func TestCommitIntervalDefaultFollowsTheGuarantee(t *testing.T) {
	o := minimal(t)
	o.Guarantee = ExactlyOnceV2
	r, err := NewRuntime(zeroTopology(), o)
	if err != nil {
		t.Fatal(err)
	}
	if r.opts.CommitInterval != DefaultCommitIntervalExactlyOnce {
		t.Errorf("commit interval %v under exactly-once, want %v", r.opts.CommitInterval, DefaultCommitIntervalExactlyOnce)
	}
}

func TestExactlyMakesZeroExplicit(t *testing.T) {
	if Exactly(int64(0)) != Zero || Exactly(time.Duration(0)) != Zero || Exactly(7) != 7 || Exactly(int16(-1)) != -1 {
		t.Error("Exactly must turn 0 into Zero and keep every other value")
	}
}

// TestDefaultOptionsTakeTheLibrariesDefaults: the processor's defaults of
// the state, placement and balancer settings are theirs, written once.
func TestDefaultOptionsTakeTheLibrariesDefaults(t *testing.T) {
	o, st, bal := DefaultOptions(), state.DefaultOptions(), balancer.DefaultSettings()
	if o.LevelDB != st.LevelDB || o.CleanupDelay != st.CleanupDelay || o.MemoryBytes != st.MemoryBytes {
		t.Errorf("state defaults %+v %v, state's %+v %v", o.LevelDB, o.CleanupDelay, st.LevelDB, st.CleanupDelay)
	}
	if !reflect.DeepEqual(o.Placement, assignor.DefaultSettings()) || !reflect.DeepEqual(o.Placement, bal.Placement) ||
		o.ProbingInterval != bal.ProbingInterval || o.heartbeatInterval != bal.HeartbeatInterval {
		t.Errorf("placement and balancer defaults differ from theirs: %+v", o)
	}
	if err := o.LevelDB.Validate(); err != nil {
		t.Error(err)
	}
}

// TestAMemoryBudgetBoundsTheRecordCache: state.memory.bytes above 0
// bounds the record cache by its part of the budget (the stores' part is
// state's: memory.go): a larger statestore.cache.max.bytes gets the part, a
// smaller one, or none (Zero), stays; a negative budget is rejected.
func TestAMemoryBudgetBoundsTheRecordCache(t *testing.T) {
	topo := zeroTopology()
	o := minimal(t)
	for _, tc := range []struct{ cache, want int64 }{
		{1 << 30, state.RecordCacheBytes(64 << 20)}, // larger than the part: the part
		{1, 1},
		{Zero, 0}, // off stays off
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
	o.MemoryBytes = -2
	if _, err := NewRuntime(topo, o); err == nil || !strings.Contains(err.Error(), "state.memory.bytes") {
		t.Errorf("a negative budget: %v; want an error naming state.memory.bytes", err)
	}
}
