package recpool

import (
	"bytes"
	"testing"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestGetCopiesKeyAndValueAndKeepsTombstones(t *testing.T) {
	var p Pool
	key, value := []byte("key"), []byte("value")
	r := p.Get(key, value)
	key[0], value[0] = 'X', 'X' // the caller's buffers are its own again
	if string(r.Key) != "key" || string(r.Value) != "value" {
		t.Fatalf("record = %q/%q, want key/value", r.Key, r.Value)
	}
	// Appending to the key must not run into the value.
	if cap(r.Key) != len(r.Key) {
		t.Fatalf("key capacity %d beyond its length %d", cap(r.Key), len(r.Key))
	}
	p.Put(r)
	for _, c := range []struct {
		name  string
		value []byte
		nil   bool
	}{{"tombstone", nil, true}, {"empty", []byte{}, false}} {
		r := p.Get([]byte("k"), c.value)
		if (r.Value == nil) != c.nil || len(r.Value) != 0 {
			t.Fatalf("%s: Value = %#v, nil %v", c.name, r.Value, r.Value == nil)
		}
		p.Put(r)
	}
}

func TestPutResetsTheRecordForItsNextUse(t *testing.T) {
	var p Pool
	r := p.Get([]byte("k"), []byte("v"))
	r.Topic, r.Partition, r.Headers = "t", 3, []kgo.RecordHeader{{Key: "h"}}
	p.Put(r)
	// sync.Pool may or may not hand the same record back: whichever comes
	// must carry nothing of an earlier use.
	for range 10 {
		r := p.Get([]byte("k2"), []byte("v2"))
		if r.Topic != "" || r.Partition != 0 || r.Headers != nil || !bytes.Equal(r.Key, []byte("k2")) || !bytes.Equal(r.Value, []byte("v2")) {
			t.Fatalf("reused record = %+v", r)
		}
		p.Put(r)
	}
}

func TestOutsizedBuffersAreNotKept(t *testing.T) {
	var p Pool
	big := p.Get(nil, make([]byte, maxKept+1))
	p.Put(big)
	for range 10 {
		r := p.Get([]byte("k"), nil)
		if cap(r.Key) > maxKept || cap((*pooled)(unsafe.Pointer(r)).buf) > maxKept {
			t.Fatal("an outsized buffer was kept")
		}
		p.Put(r)
	}
}

func TestGetAndPutAllocateNothingOnceWarm(t *testing.T) {
	var p Pool
	key, value := []byte("key"), bytes.Repeat([]byte{1}, 100)
	p.Put(p.Get(key, value))
	if n := testing.AllocsPerRun(1000, func() { p.Put(p.Get(key, value)) }); n > 0 {
		t.Fatalf("%v allocations per Get and Put", n)
	}
}
