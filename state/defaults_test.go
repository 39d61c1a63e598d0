package state

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestZeroOptionMeansZero is the table of what a zero in each field of
// Options means: zero where zero is a setting, an error naming the field
// and its key where it is not. No field's zero means "the default".
func TestZeroOptionMeansZero(t *testing.T) {
	for _, tc := range []struct {
		field string
		zero  func(*Options)
		// wantErr is a part of Open's error; "" when Open must succeed,
		// and then check says what the zero does.
		wantErr string
		check   func(t *testing.T, m *Manager)
	}{
		{field: "Dir", zero: func(o *Options) { o.Dir = "" }, wantErr: "Options.Dir (state.dir) is required"},
		{field: "ApplicationID", zero: func(o *Options) { o.ApplicationID = "" }, wantErr: "application id"},
		{field: "LevelDB.BlockCacheBytes", zero: func(o *Options) { o.LevelDB.BlockCacheBytes = 0 },
			check: func(t *testing.T, m *Manager) {
				if got := m.opts.LevelDB.blockCacheCapacity(); got != -1 {
					t.Errorf("goleveldb BlockCacheCapacity = %d, want -1 (goleveldb's 'no cache'; its 0 is 8 MiB)", got)
				}
				openAndRead(t, m)
			}},
		{field: "LevelDB.WriteBufferBytes", zero: func(o *Options) { o.LevelDB.WriteBufferBytes = 0 },
			wantErr: "WriteBufferBytes (state.leveldb.write.buffer.bytes) is 0: must be at least 1"},
		{field: "LevelDB.BloomBits", zero: func(o *Options) { o.LevelDB.BloomBits = 0 },
			check: func(t *testing.T, m *Manager) { openAndRead(t, m) }}, // no filter: Store.open adds one only for > 0
		{field: "LevelDB.Compression", zero: func(o *Options) { o.LevelDB.Compression = 0 },
			check: func(t *testing.T, m *Manager) {
				if m.opts.LevelDB.Compression != CompressionSnappy {
					t.Errorf("zero Compression is %s, want snappy", m.opts.LevelDB.Compression)
				}
			}},
		{field: "ClientOpts", zero: func(o *Options) { o.ClientOpts = nil },
			check: func(t *testing.T, m *Manager) { openAndRead(t, m) }}, // local use needs no broker
		{field: "RestoreBatchBytes", zero: func(o *Options) { o.RestoreBatchBytes = 0 },
			check: func(t *testing.T, m *Manager) {
				// A batch per record: the size limit is reached by any record.
				if b := m.opts.RestoreBatchBytes; b != 0 {
					t.Errorf("RestoreBatchBytes = %d", b)
				}
			}},
		{field: "FetchMaxBytes", zero: func(o *Options) { o.FetchMaxBytes = 0 },
			wantErr: "Options.FetchMaxBytes is 0: must be at least 1"},
		{field: "CleanupDelay", zero: func(o *Options) { o.CleanupDelay = 0 },
			check: func(t *testing.T, m *Manager) {
				// Deleted at the next cleanup, not ten minutes later.
				if err := os.MkdirAll(filepath.Join(m.root, "7", "s"), 0o755); err != nil {
					t.Fatal(err)
				}
				removed, err := m.CleanupUnassigned(time.Now())
				if err != nil || len(removed) != 1 || removed[0] != 7 {
					t.Errorf("CleanupUnassigned = %v, %v; want task 7 deleted at once", removed, err)
				}
			}},
		{field: "CleanupInterval", zero: func(o *Options) { o.CleanupInterval = 0 },
			check: func(t *testing.T, m *Manager) {
				if m.stopCleanup != nil {
					t.Error("a background cleanup runs; zero means none")
				}
			}},
		{field: "ReadCommitted", zero: func(o *Options) { o.ReadCommitted = false },
			check: func(t *testing.T, m *Manager) {}}, // read_uncommitted, as Kafka's default
		{field: "Logger", zero: func(o *Options) { o.Logger = nil },
			check: func(t *testing.T, m *Manager) {
				if m.log == nil {
					t.Error("no logger; nil means slog.Default()")
				}
			}},
		{field: "Registerer", zero: func(o *Options) { o.Registerer = nil },
			check: func(t *testing.T, m *Manager) { openAndRead(t, m) }}, // metrics kept, not registered
		{field: "WrapStorage", zero: func(o *Options) { o.WrapStorage = nil },
			check: func(t *testing.T, m *Manager) { openAndRead(t, m) }},
	} {
		t.Run(tc.field, func(t *testing.T) {
			o := DefaultOptions()
			o.Dir, o.ApplicationID = t.TempDir(), "zero"
			tc.zero(&o)
			m, err := Open(o)
			if tc.wantErr != "" {
				if err == nil {
					m.Close()
					t.Fatalf("Open with a zero %s succeeded; want an error containing %q", tc.field, tc.wantErr)
				}
				if !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Open with a zero %s: %v; want %q", tc.field, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Open with a zero %s: %v", tc.field, err)
			}
			defer m.Close()
			tc.check(t, m)
		})
	}
}

// TestStoreSpecLevelDBIsCheckedLikeTheManagers: a store's own LevelDB
// options follow the same zero rules.
func TestStoreSpecLevelDBIsCheckedLikeTheManagers(t *testing.T) {
	o := DefaultOptions()
	o.Dir, o.ApplicationID = t.TempDir(), "zero"
	m, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	_, err = m.OpenTask(0, []StoreSpec{{Name: "s", LevelDB: &LevelDBOptions{}}})
	if err == nil || !strings.Contains(err.Error(), "StoreSpec s: LevelDB.WriteBufferBytes (state.leveldb.write.buffer.bytes) is 0") {
		t.Fatalf("OpenTask with a zero store LevelDB: %v", err)
	}
}

// TestDefaultsAreTheDocumentedOnes pins the defaults the configuration
// reference shows (config takes them from here).
func TestDefaultsAreTheDocumentedOnes(t *testing.T) {
	o := DefaultOptions()
	if o.LevelDB != (LevelDBOptions{BlockCacheBytes: 8 << 20, WriteBufferBytes: 16 << 20, BloomBits: 10, Compression: CompressionSnappy}) {
		t.Errorf("LevelDB defaults %+v", o.LevelDB)
	}
	if o.CleanupDelay != 10*time.Minute || o.CleanupInterval != time.Minute || o.RestoreBatchBytes != 4<<20 || o.FetchMaxBytes != 16<<20 {
		t.Errorf("defaults %+v", o)
	}
	for _, tc := range []struct{ delay, want time.Duration }{
		{0, time.Second}, {time.Second, time.Second}, {20 * time.Second, 5 * time.Second}, {time.Hour, time.Minute},
	} {
		if got := CleanupIntervalFor(tc.delay); got != tc.want {
			t.Errorf("CleanupIntervalFor(%v) = %v, want %v", tc.delay, got, tc.want)
		}
	}
}

// openAndRead opens task 0 with one store and reads a key.
func openAndRead(t *testing.T, m *Manager) {
	t.Helper()
	task, err := m.OpenTask(0, []StoreSpec{{Name: "s"}})
	if err != nil {
		t.Fatalf("open task: %v", err)
	}
	defer task.Close()
	s := task.Stores()[0]
	if _, _, err := s.Get([]byte("k")); err != nil {
		t.Fatalf("read: %v", err)
	}
}

// TestLevelDBOptionsReadAsOptions: a zero field takes its default, Zero
// asks for no block cache or bloom filter, and Exactly turns values as
// used into options that OrDefaults returns unchanged.
func TestLevelDBOptionsReadAsOptions(t *testing.T) {
	d := DefaultLevelDBOptions()
	for _, tc := range []struct {
		name     string
		opts     LevelDBOptions
		resolved LevelDBOptions
	}{
		{"zero is the defaults", LevelDBOptions{}, d},
		{"Zero turns the block cache and bloom filter off", LevelDBOptions{BlockCacheBytes: Zero, BloomBits: Zero},
			LevelDBOptions{WriteBufferBytes: d.WriteBufferBytes, Compression: d.Compression}},
		{"set fields stay", LevelDBOptions{BlockCacheBytes: 1, WriteBufferBytes: 2, BloomBits: 3, Compression: CompressionNone},
			LevelDBOptions{BlockCacheBytes: 1, WriteBufferBytes: 2, BloomBits: 3, Compression: CompressionNone}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.opts.OrDefaults(); got != tc.resolved {
				t.Errorf("OrDefaults(%+v) = %+v, want %+v", tc.opts, got, tc.resolved)
			}
			if got := tc.resolved.Exactly().OrDefaults(); got != tc.resolved {
				t.Errorf("Exactly then OrDefaults of %+v = %+v", tc.resolved, got)
			}
		})
	}
}
