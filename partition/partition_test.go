package partition

import (
	"fmt"
	"hash/crc32"
	"hash/fnv"
	"math"
	"strings"
	"testing"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Vectors from Kafka's own UtilsTest.testMurmur2 (clients module).
func TestMurmur2MatchesKafkaUtilsTestVectors(t *testing.T) {
	cases := []struct {
		key  []byte
		want int32
	}{
		{[]byte("21"), -973932308},
		{[]byte("foobar"), -790332482},
		{[]byte("a-little-bit-long-string"), -985981536},
		{[]byte("a-little-bit-longer-string"), -1486304829},
		{[]byte("lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8"), -58897971},
		{[]byte{'a', 'b', 'c'}, 479470107},
		// Akka's Murmur2Spec, checked against the same Kafka function:
		// lengths 1..5 exercise every tail length.
		{[]byte("1"), -1993445489},
		{[]byte("12"), 126087238},
		{[]byte("123"), -267702483},
		{[]byte("1234"), -1614185708},
		{[]byte("12345"), -1188365604},
	}
	for _, c := range cases {
		if got := int32(murmur2(c.key)); got != c.want {
			t.Errorf("murmur2(%q) = %d, want %d", c.key, got, c.want)
		}
	}
}

// FNV-1a vectors: the empty string is the offset basis; "a" and "foobar"
// are the reference values of the FNV specification's test suite.
func TestFNV1aMatchesReferenceVectors(t *testing.T) {
	cases := []struct {
		key  string
		want uint32
	}{
		{"", 0x811c9dc5},
		{"a", 0xe40c292c},
		{"foobar", 0xbf9cf968},
	}
	for _, c := range cases {
		if got := fnv1a32([]byte(c.key)); got != c.want {
			t.Errorf("fnv1a32(%q) = %#x, want %#x", c.key, got, c.want)
		}
	}
}

func TestPartitionMatchesOtherClientsImplementations(t *testing.T) {
	saramaFNV := sarama.NewHashPartitioner("t") // goka's producer builder: NewCustomHashPartitioner(fnv.New32a)
	gokaFNV := sarama.NewCustomHashPartitioner(fnv.New32a)("t")
	franzMurmur := kgo.StickyKeyPartitioner(nil).ForTopic("t")
	franzCRC := kgo.StickyKeyPartitioner(kgo.SaramaHasher(crc32.ChecksumIEEE)).ForTopic("t") // franz-go's documented librdkafka `consistent` match

	for _, n := range []int32{1, 2, 3, 7, 12, 64, 1000, math.MaxInt32} {
		for i := 0; i < 2000; i++ {
			key := []byte(fmt.Sprintf("key-%d-%s", i, strings.Repeat("x", i%7)))
			if i == 0 {
				key = []byte{}
			}
			if got, want := Murmur2().Partition(key, n), int32(franzMurmur.Partition(&kgo.Record{Key: key}, int(n))); got != want {
				t.Fatalf("murmur2 %q n=%d: got %d, franz-go %d", key, n, got, want)
			}
			if got, want := CRC32().Partition(key, n), int32(franzCRC.Partition(&kgo.Record{Key: key}, int(n))); got != want {
				t.Fatalf("crc32 %q n=%d: got %d, franz-go SaramaHasher(crc32) %d", key, n, got, want)
			}
			msg := &sarama.ProducerMessage{Key: sarama.ByteEncoder(key)}
			for name, sp := range map[string]sarama.Partitioner{"sarama hash": saramaFNV, "goka": gokaFNV} {
				want, err := sp.Partition(msg, n)
				if err != nil {
					t.Fatal(err)
				}
				if got := FNV1a().Partition(key, n); got != want {
					t.Fatalf("fnv1a %q n=%d: got %d, %s partitioner %d", key, n, got, name, want)
				}
			}
		}
	}
}

func TestPartitionStaysInRangeForExtremeHashes(t *testing.T) {
	// About half of these keys hash with the sign bit set: the murmur2 mask,
	// the fnv1a negation and the unsigned crc32 modulo must each keep the
	// slot in [0, n).
	for _, p := range []Partitioner{Murmur2(), FNV1a(), CRC32()} {
		for i := 0; i < 10000; i++ {
			key := []byte(fmt.Sprint(i))
			for _, n := range []int32{1, 3, 12, math.MaxInt32} {
				if s := p.Partition(key, n); s < 0 || s >= n {
					t.Fatalf("%s: Partition(%q, %d) = %d, out of range", p.Name(), key, n, s)
				}
			}
		}
	}
}

func TestNilAndEmptyKeysShareASlot(t *testing.T) {
	for _, p := range []Partitioner{Murmur2(), FNV1a(), CRC32()} {
		if a, b := p.Partition(nil, 12), p.Partition([]byte{}, 12); a != b {
			t.Errorf("%s: nil key -> %d, empty key -> %d", p.Name(), a, b)
		}
	}
	// librdkafka's consistent partitioner maps an empty key to CRC-32("") = 0.
	if s := CRC32().Partition(nil, 12); s != 0 {
		t.Errorf("crc32 of the empty key = slot %d, librdkafka's consistent gives 0", s)
	}
}

func TestByNameSelectsEachPartitionerAndRejectsUnknownNames(t *testing.T) {
	for _, name := range Names() {
		p, err := ByName(name)
		if err != nil {
			t.Fatalf("ByName(%q): %v", name, err)
		}
		if p.Name() != name {
			t.Errorf("ByName(%q).Name() = %q", name, p.Name())
		}
	}
	if p, err := ByName(""); err != nil || p.Name() != Default {
		t.Errorf("ByName(\"\") = %v, %v; want the default %s", p, err, Default)
	}
	_, err := ByName("murmur3")
	if err == nil || !strings.Contains(err.Error(), `"murmur3"`) || !strings.Contains(err.Error(), "murmur2, fnv1a, crc32") {
		t.Errorf("ByName(murmur3) error = %v; want it to name the value and list the valid ones", err)
	}
}

func TestKgoPartitionerUsesTheSlotForKeyedRecords(t *testing.T) {
	for _, p := range []Partitioner{Murmur2(), FNV1a(), CRC32()} {
		tp := Kgo(p).ForTopic("t")
		for i := 0; i < 500; i++ {
			r := &kgo.Record{Key: []byte(fmt.Sprint("k", i))}
			if !tp.RequiresConsistency(r) {
				t.Fatalf("%s: a keyed record must be partitioned consistently", p.Name())
			}
			if got, want := tp.Partition(r, 12), int(p.Partition(r.Key, 12)); got != want {
				t.Fatalf("%s: kgo partitioner put %q in %d, Partition says %d", p.Name(), r.Key, got, want)
			}
		}
		if tp.RequiresConsistency(&kgo.Record{}) {
			t.Errorf("%s: a keyless record has no slot and should be spread (sticky)", p.Name())
		}
	}
}

var sink int32

func BenchmarkPartition(b *testing.B) {
	key := []byte("user-0000012345")
	for _, p := range []Partitioner{Murmur2(), FNV1a(), CRC32()} {
		b.Run(p.Name(), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				sink += p.Partition(key, 12)
			}
		})
	}
}
