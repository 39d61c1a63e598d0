package state

import (
	"errors"
	"fmt"
	"time"
)

// DefaultOptions returns the defaults of every tunable field of Options:
// the one place they are written. The configuration's key table takes its
// defaults for state.leveldb.* and state.cleanup.delay.ms from here. Dir
// and ApplicationID have no default. Set them, and change what you need:
//
//	o := state.DefaultOptions()
//	o.Dir, o.ApplicationID = "/var/lib/rackstream", "orders"
//	m, err := state.Open(o)
//
// A field left at its zero value means zero, not "the default". A zero
// block cache is no block cache; a zero cleanup delay deletes at the next
// cleanup. Where zero makes no sense, as for a memtable or a fetch size,
// Open rejects it, naming the field and its configuration key.
func DefaultOptions() Options {
	delay := 10 * time.Minute
	return Options{
		LevelDB:           DefaultLevelDBOptions(),
		MemoryBytes:       DefaultMemoryBytes,
		RestoreBatchBytes: 4 << 20,
		FetchMaxBytes:     16 << 20,
		CleanupDelay:      delay,
		CleanupInterval:   CleanupIntervalFor(delay),
	}
}

// DefaultMemoryBytes is the default memory budget of an instance's stores
// and record cache (state.memory.bytes). With 12 stores, each gets a 2 MiB
// memtable and a 4 MiB block cache, and the record cache gets 32 MiB when
// it is on. docs/lab/profile-count.md has the measurements that chose it.
const DefaultMemoryBytes = 128 << 20

// DefaultLevelDBOptions returns the stores' default LevelDB options: an
// 8 MiB block cache, a 16 MiB memtable, a 10-bit bloom filter and snappy
// blocks. Larger memtables restore faster, at the cost of memory per open
// store.
func DefaultLevelDBOptions() LevelDBOptions {
	return LevelDBOptions{
		BlockCacheBytes:  8 << 20,
		WriteBufferBytes: 16 << 20,
		BloomBits:        10,
		Compression:      CompressionSnappy,
	}
}

// Zero asks for zero in an option whose zero value means its default, as
// the options of package processor and package table read
// LevelDBOptions: BloomBits: Zero is no bloom filter.
const Zero = -1

// OrDefaults returns o read as options: a field left at zero takes
// DefaultLevelDBOptions' value, and Zero asks for no block cache
// (BlockCacheBytes) or no bloom filter (BloomBits). Compression's zero
// value is snappy, the default.
func (o LevelDBOptions) OrDefaults() LevelDBOptions {
	d := DefaultLevelDBOptions()
	switch o.BlockCacheBytes {
	case 0:
		o.BlockCacheBytes = d.BlockCacheBytes
	case Zero:
		o.BlockCacheBytes = 0
	}
	if o.WriteBufferBytes == 0 {
		o.WriteBufferBytes = d.WriteBufferBytes
	}
	switch o.BloomBits {
	case 0:
		o.BloomBits = d.BloomBits
	case Zero:
		o.BloomBits = 0
	}
	return o
}

// Exactly returns o, whose values are as used, as options that OrDefaults
// returns unchanged: no block cache or no bloom filter as Zero.
func (o LevelDBOptions) Exactly() LevelDBOptions {
	if o.BlockCacheBytes == 0 {
		o.BlockCacheBytes = Zero
	}
	if o.BloomBits == 0 {
		o.BloomBits = Zero
	}
	return o
}

// CleanupIntervalFor returns the background cleanup interval that suits a
// cleanup delay: a quarter of it, at least a second and at most a minute.
// Stores are then deleted within a quarter of the delay after it expires,
// and within a minute.
func CleanupIntervalFor(delay time.Duration) time.Duration {
	return min(max(delay/4, time.Second), time.Minute)
}

// check reports the fields of o that no value of theirs makes sense at,
// naming each with its configuration key.
func (o *Options) check() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("state: "+format, args...)) }
	if o.Dir == "" {
		bad("Options.Dir (state.dir) is required")
	}
	if err := o.LevelDB.check("Options.LevelDB"); err != nil {
		errs = append(errs, err)
	}
	if o.MemoryBytes < 0 {
		bad("Options.MemoryBytes (state.memory.bytes) is %d: must be at least 0 (0: the per-store LevelDB sizes)", o.MemoryBytes)
	}
	if o.RestoreBatchBytes < 0 {
		bad("Options.RestoreBatchBytes is %d: must be at least 0 (0 writes a batch per record)", o.RestoreBatchBytes)
	}
	if o.FetchMaxBytes <= 0 {
		bad("Options.FetchMaxBytes is %d: must be at least 1 (DefaultOptions has %d)", o.FetchMaxBytes, DefaultOptions().FetchMaxBytes)
	}
	if o.CleanupDelay < 0 {
		bad("Options.CleanupDelay (state.cleanup.delay.ms) is %v: must be at least 0", o.CleanupDelay)
	}
	if o.CleanupInterval < 0 {
		bad("Options.CleanupInterval is %v: must be at least 0 (0: no background cleanup)", o.CleanupInterval)
	}
	return errors.Join(errs...)
}

// check reports the fields of o that no value of theirs makes sense at;
// where says whose options they are.
func (o *LevelDBOptions) check(where string) error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("state: %s."+format, append([]any{where}, args...)...))
	}
	if o.BlockCacheBytes < 0 {
		bad("BlockCacheBytes (state.leveldb.block.cache.bytes) is %d: must be at least 0 (0: no block cache)", o.BlockCacheBytes)
	}
	if o.WriteBufferBytes <= 0 {
		bad("WriteBufferBytes (state.leveldb.write.buffer.bytes) is %d: must be at least 1 (DefaultLevelDBOptions has %d)", o.WriteBufferBytes, DefaultLevelDBOptions().WriteBufferBytes)
	}
	if o.BloomBits < 0 {
		bad("BloomBits (state.leveldb.bloom.bits) is %d: must be at least 0 (0: no bloom filter)", o.BloomBits)
	}
	if o.Compression != CompressionSnappy && o.Compression != CompressionNone {
		bad("Compression (state.leveldb.compression) is %s: must be snappy or none", o.Compression)
	}
	return errors.Join(errs...)
}

// blockCacheCapacity is goleveldb's BlockCacheCapacity for o. goleveldb
// reads 0 as its own default, 8 MiB, and -1 as no cache.
func (o *LevelDBOptions) blockCacheCapacity() int {
	if o.BlockCacheBytes == 0 {
		return -1
	}
	return o.BlockCacheBytes
}

// Validate reports the fields of o that no value of theirs makes sense at,
// naming each with its configuration key. Open and OpenTask reject those.
func (o LevelDBOptions) Validate() error { return o.check("LevelDB") }
