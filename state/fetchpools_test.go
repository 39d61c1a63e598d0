package state

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// A batch of n records gets a slice of at most 2n (at least one), from its
// own size class: a slice sized for a large batch never serves a small one,
// and a returned slice serves the next batch of its class.
func TestRecordPoolSizeClasses(t *testing.T) {
	var rp recordPool
	for _, tc := range []struct{ n, wantCap int }{
		{0, 1}, {1, 1}, {2, 2}, {3, 4}, {4, 4}, {5, 8}, {256, 256}, {257, 512}, {1 << 16, 1 << 16},
		{1<<16 + 1, 1<<16 + 1}, // past the largest class: exactly n, not pooled
	} {
		rs := rp.GetRecords(tc.n)
		if len(rs) != 0 || cap(rs) != tc.wantCap {
			t.Errorf("GetRecords(%d): len %d cap %d, want len 0 cap %d", tc.n, len(rs), cap(rs), tc.wantCap)
		}
	}
	big := rp.GetRecords(4096)
	rp.PutRecords(big[:cap(big)])
	if small := rp.GetRecords(3); cap(small) != 4 {
		t.Errorf("a batch of 3 after a 4096-record slice was returned: cap %d, want 4", cap(small))
	}
	odd := make([]kgo.Record, 0, 300)
	rp.PutRecords(odd) // not a class size: dropped, never handed out as a 256
	for range 3 {
		if rs := rp.GetRecords(256); cap(rs) != 256 {
			t.Fatalf("GetRecords(256) after a 300-cap slice was put: cap %d", cap(rs))
		}
	}
}
