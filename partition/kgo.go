package partition

import "github.com/twmb/franz-go/pkg/kgo"

// Kgo returns p as a franz-go partitioner, for users' own producers:
//
//	kgo.NewClient(kgo.RecordPartitioner(partition.Kgo(partition.Murmur2())), ...)
//
// A record with a key (an empty key included) goes to p.Partition(key, n).
// A record without a key (nil) has no slot; it is spread with franz-go's
// sticky partitioning, as Kafka's Java producer spreads keyless records.
func Kgo(p Partitioner) kgo.Partitioner {
	return kgo.StickyKeyPartitioner(func(key []byte, n int) int {
		return int(p.Partition(key, int32(n)))
	})
}
