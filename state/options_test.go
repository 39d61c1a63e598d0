package state

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestParseCompressionAcceptsTheConfigSpellings(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    Compression
		wantErr bool
	}{
		{"", CompressionSnappy, false},
		{"snappy", CompressionSnappy, false},
		{" Snappy ", CompressionSnappy, false},
		{"none", CompressionNone, false},
		{"NONE", CompressionNone, false},
		{"lz4", 0, true},
	} {
		got, err := ParseCompression(tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("ParseCompression(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
	if CompressionNone.String() != "none" || CompressionSnappy.String() != "snappy" {
		t.Errorf("String() = %s, %s", CompressionNone, CompressionSnappy)
	}
}

// TestChangelogPartitionerKeepsTheTaskPartition: changelog records stay in
// the partition the store set (its task), whatever their key hashes to;
// other topics are partitioned by the fallback.
func TestChangelogPartitionerKeepsTheTaskPartition(t *testing.T) {
	fallback := kgo.StickyKeyPartitioner(nil)
	p := ChangelogPartitioner(func(topic string) bool { return topic == "app-s-changelog" }, fallback)
	for _, key := range []string{"a", "b", "c", "d", "e"} {
		r := &kgo.Record{Topic: "app-s-changelog", Key: []byte(key), Partition: 3}
		if got := p.ForTopic(r.Topic).Partition(r, 8); got != 3 {
			t.Fatalf("changelog record with key %q went to partition %d, want its task's 3", key, got)
		}
		out := &kgo.Record{Topic: "output", Key: []byte(key), Partition: 3}
		if got, want := p.ForTopic("output").Partition(out, 8), fallback.ForTopic("output").Partition(out, 8); got != want {
			t.Fatalf("output record with key %q went to %d, the fallback says %d", key, got, want)
		}
	}
}
