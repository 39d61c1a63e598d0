package processor

import (
	"github.com/twmb/franz-go/pkg/kgo"
)

// recordCache is a task's record cache (statestore.cache.max.bytes, Kafka
// Streams' name): within a commit interval, the writes to one key of a store,
// and the emits of one key to an output, are merged so that only the last
// reaches the changelog and the output. Reads see it. It is flushed before
// every commit (so the commit covers it) and whenever it outgrows its
// budget; it is dropped with the task's other uncommitted work.
//
// It belongs to the task goroutine, or to a commit holding the task's lock.
type recordCache struct {
	budget  int64
	size    int64
	entries map[cacheKey]*cacheEntry
	order   []cacheKey // first-write order, for a deterministic flush
}

// cacheKey is a store or output (by index; outputs after stores) and a key.
type cacheKey struct {
	target int
	key    string
}

type cacheEntry struct {
	value   []byte // nil: a delete (store) or a tombstone (output)
	headers []kgo.RecordHeader
}

// cacheOverhead approximates an entry's bookkeeping bytes.
const cacheOverhead = 64

func newRecordCache(budget int64) *recordCache {
	return &recordCache{budget: budget, entries: make(map[cacheKey]*cacheEntry)}
}

// put records a write, copying key and value out of the caller's buffer.
// It reports whether the cache is now over its budget.
func (c *recordCache) put(target int, key, value []byte, headers []kgo.RecordHeader) bool {
	k := cacheKey{target, string(key)}
	var v []byte
	if value != nil {
		v = append(make([]byte, 0, len(value)), value...)
	}
	if e := c.entries[k]; e != nil {
		c.size += int64(len(v) - len(e.value))
		e.value, e.headers = v, headers
	} else {
		c.entries[k] = &cacheEntry{value: v, headers: headers}
		c.order = append(c.order, k)
		c.size += int64(len(key)+len(v)) + cacheOverhead
	}
	return c.size > c.budget
}

// get returns a store's cached value of key: found reports whether the
// cache has the key at all, and value is nil for a cached delete.
func (c *recordCache) get(target int, key []byte) (value []byte, found bool) {
	e := c.entries[cacheKey{target, string(key)}]
	if e == nil {
		return nil, false
	}
	return e.value, true
}

// drain calls fn for every entry in first-write order and empties the cache.
// It stops at the first error, keeping nothing: the caller fails the task.
func (c *recordCache) drain(fn func(target int, key []byte, e *cacheEntry) error) error {
	defer func() {
		clear(c.entries)
		c.order = c.order[:0]
		c.size = 0
	}()
	for _, k := range c.order {
		if err := fn(k.target, []byte(k.key), c.entries[k]); err != nil {
			return err
		}
	}
	return nil
}
