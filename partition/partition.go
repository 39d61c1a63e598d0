// Package partition is Rackstream's one mapping contract: the function that
// maps a record key to its partition slot. Task i owns partition i of every
// input topic and of every changelog, so the processor's emits, the HTTP
// query router, `rackstream produce` and users' own producers must all agree
// on it; a key hashed two ways lands in a task that never sees its state.
//
// Three functions are offered, each bit-for-bit the one a well-known client
// uses, so that records produced by that client land where Rackstream looks:
//
//	murmur2  Kafka's Java clients (Utils.murmur2, positive by masking the
//	         sign bit), franz-go's default keyed partitioning
//	         (kgo.StickyKeyPartitioner / kgo.KafkaHasher) and librdkafka's
//	         murmur2 and murmur2_random partitioners. The default.
//	fnv1a    goka's default hasher through sarama's hash partitioner: the
//	         32-bit FNV-1a hash read as int32, modulo the partition count,
//	         negated if negative.
//	crc32    librdkafka's `consistent` partitioner (and the keyed half of its
//	         `consistent_random`): CRC-32 (IEEE) of the key as an unsigned
//	         number, modulo the partition count.
//
// A Partitioner is defined for every key, including the empty one: nil and
// empty keys hash like an empty byte string (murmur2 and crc32 then agree
// with librdkafka's murmur2 and consistent for an empty key). Producers treat
// a record with no key differently: see Kgo.
package partition

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strings"
)

// Partitioner maps a key to its partition slot in [0, partitions).
// Implementations are stateless and safe for concurrent use.
type Partitioner interface {
	// Name is the configuration value that selects the partitioner
	// (`partitioner` = murmur2, fnv1a or crc32).
	Name() string
	// Partition returns the slot of key among partitions (> 0) partitions.
	Partition(key []byte, partitions int32) int32
}

// Names of the partitioners, as the `partitioner` configuration key spells them.
const (
	NameMurmur2 = "murmur2"
	NameFNV1a   = "fnv1a"
	NameCRC32   = "crc32"
)

// Default is the partitioner used when none is configured: murmur2.
const Default = NameMurmur2

// Names lists the valid partitioner names, the default first.
func Names() []string { return []string{NameMurmur2, NameFNV1a, NameCRC32} }

// ByName returns the partitioner called name; the empty name selects the
// default. An unknown name is an error that lists the valid ones.
func ByName(name string) (Partitioner, error) {
	switch name {
	case NameMurmur2, "":
		return Murmur2(), nil
	case NameFNV1a:
		return FNV1a(), nil
	case NameCRC32:
		return CRC32(), nil
	}
	return nil, fmt.Errorf("unknown partitioner %q: valid are %s", name, strings.Join(Names(), ", "))
}

// Murmur2 returns Kafka's default keyed partitioner.
func Murmur2() Partitioner { return murmur2Partitioner{} }

// FNV1a returns goka's (sarama's hash) partitioner.
func FNV1a() Partitioner { return fnv1aPartitioner{} }

// CRC32 returns librdkafka's `consistent` partitioner.
func CRC32() Partitioner { return crc32Partitioner{} }

type murmur2Partitioner struct{}

func (murmur2Partitioner) Name() string { return NameMurmur2 }

// Partition is Kafka's Utils.toPositive(Utils.murmur2(key)) % partitions:
// the sign bit is masked off, not negated.
func (murmur2Partitioner) Partition(key []byte, partitions int32) int32 {
	return int32(murmur2(key)&0x7fffffff) % partitions
}

type fnv1aPartitioner struct{}

func (fnv1aPartitioner) Name() string { return NameFNV1a }

// Partition is sarama's hashPartitioner without referenceAbs or
// hashUnsigned (what goka's producer builders install): the remainder of the
// signed hash, negated if negative. Negating the remainder rather than the
// hash keeps math.MinInt32 in range.
func (fnv1aPartitioner) Partition(key []byte, partitions int32) int32 {
	p := int32(fnv1a32(key)) % partitions
	if p < 0 {
		p = -p
	}
	return p
}

type crc32Partitioner struct{}

func (crc32Partitioner) Name() string { return NameCRC32 }

// Partition is librdkafka's rd_kafka_msg_partitioner_consistent: unsigned
// CRC-32 modulo the partition count.
func (crc32Partitioner) Partition(key []byte, partitions int32) int32 {
	return int32(crc32.ChecksumIEEE(key) % uint32(partitions))
}

// murmur2 is the 32-bit MurmurHash2 variant of Kafka's Utils.murmur2: seed
// 0x9747b28c, little-endian 4-byte blocks, the tail mixed in byte by byte.
func murmur2(data []byte) uint32 {
	const (
		seed = 0x9747b28c
		m    = 0x5bd1e995
		r    = 24
	)
	h := uint32(seed) ^ uint32(len(data))
	blocks := len(data) &^ 3
	for i := 0; i < blocks; i += 4 {
		k := binary.LittleEndian.Uint32(data[i:])
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
	}
	tail := data[blocks:]
	switch len(tail) {
	case 3:
		h ^= uint32(tail[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(tail[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(tail[0])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return h
}

// fnv1a32 is the 32-bit FNV-1a hash (hash/fnv.New32a) without the allocation
// of a hash.Hash32 per key.
func fnv1a32(data []byte) uint32 {
	const (
		offset32 = 2166136261
		prime32  = 16777619
	)
	h := uint32(offset32)
	for _, b := range data {
		h ^= uint32(b)
		h *= prime32
	}
	return h
}
