package cluster

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
)

// WindowKey names one window of one key: the key and the window's start,
// epoch ms.
type WindowKey struct {
	Key   string
	Start int64
}

// Tumbling is a tumbling window definition as a checker sees it: windows
// [start, start+Size) aligned to the epoch, closed once stream time
// reaches end + Grace. Sizes and times are in ms.
type Tumbling struct {
	Size, Grace int64
}

// Due is what a windowed count with final results only must emit for the
// records of its input.
type Due struct {
	// Finals are the windows closed by the last stream time of their
	// partition, each with its final count: the key's records in the
	// window that were not late.
	Finals map[WindowKey]int64
	// Open are the windows that some record reached in time but that
	// are still open at the end: no final result may exist for them yet.
	Open map[WindowKey]bool
	// Late is the number of records dropped as late: their window had
	// closed when they arrived.
	Late int
}

// Expect computes what a count over w with final results only emits for in,
// the records of its input topic (every record with a value, Partition,
// Offset and Timestamp set). A partition is one task: its stream time
// is the largest timestamp among its records up to and including the one
// at hand, in offset order, and a record whose window has closed at that
// stream time is late. Each key must be written to one partition only.
func (w Tumbling) Expect(in []Record) Due {
	byPart := map[int32][]Record{}
	for _, r := range in {
		byPart[r.Partition] = append(byPart[r.Partition], r)
	}
	d := Due{Finals: map[WindowKey]int64{}, Open: map[WindowKey]bool{}}
	for _, recs := range byPart {
		slices.SortFunc(recs, func(a, b Record) int { return cmp.Compare(a.Offset, b.Offset) })
		st := int64(-1)
		counts := map[WindowKey]int64{}
		for _, r := range recs {
			ts := r.Timestamp.UnixMilli()
			st = max(st, ts)
			start := ts - ts%w.Size
			if ts < 0 || w.closed(start, st) {
				d.Late++
				continue
			}
			counts[WindowKey{r.Key, start}]++
		}
		for k, n := range counts {
			if w.closed(k.Start, st) {
				d.Finals[k] = n
			} else {
				d.Open[k] = true
			}
		}
	}
	return d
}

// closed reports whether the window starting at start has closed at
// stream time st.
func (w Tumbling) closed(start, st int64) bool { return start+w.Size+w.Grace <= st }

// Finals is what a windowed count's output holds of the final results due.
type Finals struct {
	// Due is the number of final results due, Seen those found at least
	// once.
	Due, Seen int
	// Missing counts the results due that never came; Duplicated the
	// extra copies of results seen more than once; WrongCount the results
	// whose count is not the number of the window's records.
	Missing, Duplicated, WrongCount int
	// Early counts results for windows still open; PastGrace results for
	// windows that no record reached in time (its records all late, or
	// none at all).
	Early, PastGrace int
	// Garbage counts records that are no window result of this definition.
	Garbage int
	// Faults lists up to 10 of the faults above, for the log.
	Faults []string
}

// OK reports whether every final result due came exactly once with its
// count, and nothing else did.
func (f Finals) OK() bool {
	return f.Missing+f.Duplicated+f.WrongCount+f.Early+f.PastGrace+f.Garbage == 0
}

func (f *Finals) fault(format string, args ...any) {
	if len(f.Faults) < 10 {
		f.Faults = append(f.Faults, fmt.Sprintf(format, args...))
	}
}

// windowResult is a windowed output record's value.
type windowResult struct {
	Start *int64 `json:"start"`
	End   *int64 `json:"end"`
	Value *int64 `json:"value"`
}

// Check compares out, the records of a count's output topic (values
// {"start": ms, "end": ms, "value": n} keyed by the input key), with d.
func (w Tumbling) Check(d Due, out []Record) Finals {
	f := Finals{Due: len(d.Finals)}
	seen := map[WindowKey]int{}
	for _, r := range out {
		var v windowResult
		if err := json.Unmarshal([]byte(r.Value), &v); err != nil || v.Start == nil || v.End == nil || v.Value == nil || *v.End != *v.Start+w.Size {
			f.Garbage++
			f.fault("partition %d offset %d: %q is no result of a %d ms window", r.Partition, r.Offset, r.Value, w.Size)
			continue
		}
		k := WindowKey{r.Key, *v.Start}
		seen[k]++
		want, due := d.Finals[k]
		switch {
		case d.Open[k]:
			f.Early++
			f.fault("%s [%d,%d): a result before the window closed (partition %d offset %d)", k.Key, k.Start, *v.End, r.Partition, r.Offset)
		case !due:
			f.PastGrace++
			f.fault("%s [%d,%d): a result for a window no record reached in time (partition %d offset %d)", k.Key, k.Start, *v.End, r.Partition, r.Offset)
		case *v.Value != want:
			f.WrongCount++
			f.fault("%s [%d,%d): count %d, want %d (partition %d offset %d)", k.Key, k.Start, *v.End, *v.Value, want, r.Partition, r.Offset)
		}
	}
	keys := make([]WindowKey, 0, len(d.Finals))
	for k := range d.Finals {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b WindowKey) int { return cmp.Or(cmp.Compare(a.Key, b.Key), cmp.Compare(a.Start, b.Start)) })
	for _, k := range keys {
		switch n := seen[k]; {
		case n == 0:
			f.Missing++
			f.fault("%s [%d,%d): no final result", k.Key, k.Start, k.Start+w.Size)
		case n > 1:
			f.Seen++
			f.Duplicated += n - 1
			f.fault("%s [%d,%d): %d final results", k.Key, k.Start, k.Start+w.Size, n)
		default:
			f.Seen++
		}
	}
	return f
}
