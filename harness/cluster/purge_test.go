package cluster

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// looks builds samples a second apart from per-look offsets of partitions
// 0 and 1.
func looks(parts ...[2]PartitionOffsets) []PurgeSample {
	t0 := time.Unix(1000, 0)
	out := make([]PurgeSample, len(parts))
	for i, p := range parts {
		out[i] = PurgeSample{At: t0.Add(time.Duration(i) * time.Second), Parts: map[int32]PartitionOffsets{0: p[0], 1: p[1]}}
	}
	return out
}

func TestCheckPurgeMeasuresHowLongTheLogStartTrailsTheCommittedOffset(t *testing.T) {
	rep := CheckPurge(looks(
		[2]PartitionOffsets{{0, 10, 20}, {0, -1, 0}},
		[2]PartitionOffsets{{0, 15, 20}, {0, -1, 0}}, // 10 and 15 pending since 0 s and 1 s
		[2]PartitionOffsets{{10, 20, 20}, {0, 4, 4}}, // 10 reached after 2 s
		[2]PartitionOffsets{{10, 20, 30}, {4, 4, 4}}, // partition 1's 4 reached after 1 s
		[2]PartitionOffsets{{20, 20, 30}, {4, 4, 4}}, // 15 reached after 3 s, 20 after 2 s
	))
	if len(rep.Overpurged) != 0 {
		t.Errorf("overpurged %v, want none", rep.Overpurged)
	}
	if rep.MaxLag != 3*time.Second {
		t.Errorf("max lag %v, want 3s (offset 15 of partition 0)", rep.MaxLag)
	}
	if rep.MaxBehind != 15 {
		t.Errorf("max behind %d, want 15", rep.MaxBehind)
	}
	if len(rep.Behind) != 0 || rep.Written != 34 || rep.Purged != 24 || rep.Samples != 5 {
		t.Errorf("last look: behind %v written %d purged %d samples %d, want none, 34, 24, 5", rep.Behind, rep.Written, rep.Purged, rep.Samples)
	}
}

func TestCheckPurgeFlagsRecordsDeletedAboveTheCommittedOffset(t *testing.T) {
	rep := CheckPurge(looks(
		[2]PartitionOffsets{{0, 10, 20}, {0, -1, 5}},
		[2]PartitionOffsets{{12, 10, 20}, {3, -1, 5}}, // both deleted what the group has not handled
	))
	if len(rep.Overpurged) != 2 || !strings.Contains(rep.Overpurged[0], "partition 0") || !strings.Contains(rep.Overpurged[1], "partition 1") {
		t.Errorf("overpurged %v, want partitions 0 and 1", rep.Overpurged)
	}
}

func TestCheckPurgeCountsACommittedOffsetNeverReachedUpToTheLastLook(t *testing.T) {
	rep := CheckPurge(looks(
		[2]PartitionOffsets{{0, 0, 0}, {0, 0, 0}},
		[2]PartitionOffsets{{0, 8, 8}, {0, 0, 0}},
		[2]PartitionOffsets{{0, 8, 8}, {0, 0, 0}},
		[2]PartitionOffsets{{0, 8, 8}, {0, 0, 0}},
	))
	if rep.MaxLag != 2*time.Second || !reflect.DeepEqual(rep.Behind, []int32{0}) {
		t.Errorf("max lag %v behind %v, want 2s and [0]", rep.MaxLag, rep.Behind)
	}
	if rep := CheckPurge(nil); rep.MaxLag != 0 || rep.Behind != nil || rep.Samples != 0 {
		t.Errorf("no looks: %+v", rep)
	}
}

func TestCheckCountsChecksEachKeyAgainstItsOwnCount(t *testing.T) {
	recs := []Record{
		{Key: "de", Value: "1"}, {Key: "de", Value: "2"},
		{Key: "fr", Value: "1"}, {Key: "fr", Value: "3"}, {Key: "fr", Value: "4"}, // fr: 2 missing, 4 past its count
	}
	s := CheckCounts(recs, map[string]int{"de": 2, "fr": 3})
	if s.Lost != 1 || !reflect.DeepEqual(s.Missing, []string{"fr@2"}) || s.Garbage != 1 || s.OutOfOrder != 1 {
		t.Errorf("%+v, want fr@2 lost, one garbage, one out of order", s)
	}
}

func TestFieldCountsCountsRecordsPerValueOfTheField(t *testing.T) {
	recs := []Record{
		{Value: `{"country":"de","seq":1}`}, {Value: `{"country":"de"}`}, {Value: `{"country":7}`},
		{Value: `{"seq":1}`}, {Value: `12`},
	}
	counts, without := FieldCounts(recs, "country")
	if !reflect.DeepEqual(counts, map[string]int{"de": 2, "7": 1}) || without != 2 {
		t.Errorf("counts %v without %d, want de=2 7=1 and 2 without", counts, without)
	}
}
