package cluster

import (
	"reflect"
	"testing"
)

func TestCheckSequencesCountsMissingNumbersNotRecords(t *testing.T) {
	keys := []string{"a", "b"}
	recs := []Record{
		{"a", "1"}, {"a", "2"}, {"a", "2"}, {"a", "3"}, // a: all, one duplicate
		{"b", "1"}, {"b", "1"}, {"b", "3"}, // b: 2 missing, hidden by a duplicate in a count
		{"c", "1"}, {"a", "x"}, {"a", "9"}, // garbage
	}
	s := CheckSequences(recs, keys, 3)
	if s.Lost != 1 || !reflect.DeepEqual(s.Missing, []string{"b@2"}) {
		t.Errorf("lost %d %v, want 1 [b@2]", s.Lost, s.Missing)
	}
	if s.Duplicated != 2 {
		t.Errorf("duplicated %d, want 2", s.Duplicated)
	}
	if s.Garbage != 3 {
		t.Errorf("garbage %d, want 3", s.Garbage)
	}
	// a: 1 2 2(replay) 3 -> one out of order; b: 1 1 3 -> two.
	if s.OutOfOrder != 3 {
		t.Errorf("out of order %d, want 3", s.OutOfOrder)
	}
	if s.Last["a"] != 3 || s.Last["b"] != 3 {
		t.Errorf("last %v", s.Last)
	}
}

func TestCheckSequencesOfAnEmptyTopicLosesEverything(t *testing.T) {
	s := CheckSequences(nil, []string{"a", "b"}, 5)
	if s.Lost != 10 || s.Duplicated != 0 || len(s.Missing) != 10 {
		t.Errorf("%+v", s)
	}
}
