package cluster

import (
	"reflect"
	"testing"
	"time"
)

func TestCheckSequencesCountsMissingNumbersNotRecords(t *testing.T) {
	keys := []string{"a", "b"}
	recs := []Record{
		{Key: "a", Value: "1"}, {Key: "a", Value: "2"}, {Key: "a", Value: "2"}, {Key: "a", Value: "3"}, // a: all, one duplicate
		{Key: "b", Value: "1"}, {Key: "b", Value: "1"}, {Key: "b", Value: "3"}, // b: 2 missing, hidden by a duplicate in a count
		{Key: "c", Value: "1"}, {Key: "a", Value: "x"}, {Key: "a", Value: "9"}, // garbage
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

func TestExcusingCutsExcusedIntervalsOutOfWindows(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	rep := ProbeReport{Windows: []Window{
		{Key: "a", From: at(0), To: at(30)},  // the broker down 5..20: 0..5 and 20..30 remain
		{Key: "b", From: at(40), To: at(47)}, // untouched
		{Key: "c", From: at(6), To: at(19)},  // wholly excused
	}}
	w := rep.Excusing([2]time.Time{at(5), at(20)})
	if w.Key != "a" || w.Len() != 10*time.Second || !w.From.Equal(at(20)) {
		t.Errorf("worst excused window %+v (%v), want a's 20..30", w, w.Len())
	}
	if w := rep.Excusing(); w.Key != "a" || w.Len() != 30*time.Second {
		t.Errorf("nothing excused: %+v, want a's 30 s", w)
	}
	if w := rep.Excusing([2]time.Time{at(0), at(50)}); w.Len() != 0 {
		t.Errorf("everything excused: %+v, want nothing", w)
	}
}
