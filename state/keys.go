package state

import (
	"encoding/binary"

	"github.com/syndtr/goleveldb/leveldb/util"
)

// A store's LevelDB key space is split by the first byte: metadata under
// metaPrefix, user data under dataPrefix. User keys are always stored with
// dataPrefix prepended, so no user key can overwrite the checkpoint.
const (
	metaPrefix byte = 0x00
	dataPrefix byte = 0x01
)

var (
	checkpointKey = []byte{metaPrefix, 'c', 'h', 'e', 'c', 'k', 'p', 'o', 'i', 'n', 't'}
	dataRange     = util.Range{Start: []byte{dataPrefix}, Limit: []byte{dataPrefix + 1}}
)

// appendDataKey appends the stored form of user key k to dst.
func appendDataKey(dst, k []byte) []byte {
	dst = append(dst, dataPrefix)
	return append(dst, k...)
}

// dataRangeFor returns the stored range of user keys in [start, end); nil
// bounds are open.
func dataRangeFor(start, end []byte) *util.Range {
	r := &util.Range{Start: appendDataKey(nil, start)}
	if end == nil {
		r.Limit = dataRange.Limit
	} else {
		r.Limit = appendDataKey(nil, end)
	}
	return r
}

// prefixEnd returns the smallest key greater than every key with prefix p,
// or nil when there is none (p empty or all 0xff).
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

func encodeOffset(dst []byte, off int64) []byte {
	return binary.BigEndian.AppendUint64(dst, uint64(off))
}

func decodeOffset(b []byte) (int64, bool) {
	if len(b) != 8 {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(b)), true
}
