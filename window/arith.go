package window

// Window is a window's time interval in epoch milliseconds. Whether End
// belongs to it depends on the definition, as in Kafka Streams: TimeWindows
// are half-open, [Start, End); sliding and session windows are closed,
// [Start, End]. Start is never negative.
type Window struct {
	Start int64
	End   int64
}

// WindowsFor returns the windows of w that contain ts, oldest first: every
// [s, s+Size) with s a non-negative multiple of Advance and s <= ts < s+Size.
// Windows are aligned to the epoch in UTC and never start before 0, so a
// record earlier than Size-Advance lands in fewer windows than the others,
// and a negative timestamp in none (Kafka Streams' rule). Neither does a
// timestamp above MaxTimestamp.
func (w TimeWindows) WindowsFor(ts int64) []Window {
	if ts < 0 || ts > MaxTimestamp {
		return nil
	}
	start := max(0, ts-w.Size+w.Advance) / w.Advance * w.Advance
	out := make([]Window, 0, (ts-start)/w.Advance+1)
	for ; start <= ts; start += w.Advance {
		out = append(out, Window{Start: start, End: start + w.Size})
	}
	return out
}

// Closed reports whether win stopped accepting records at stream time st:
// st >= End + Grace. A record whose stream time reaches exactly End + Grace
// is already too late, as in Kafka Streams' window aggregation.
func (w TimeWindows) Closed(win Window, st int64) bool { return win.End+w.Grace <= st }

// Place splits the windows containing a record at ts, at stream time st
// (already advanced by this record), into those it updates and those it is
// too late for. Kafka Streams decides window by window, so a record can be
// late for some hopping windows and still update others.
func (w TimeWindows) Place(ts, st int64) (open, late []Window) {
	for _, win := range w.WindowsFor(ts) {
		if w.Closed(win, st) {
			late = append(late, win)
		} else {
			open = append(open, win)
		}
	}
	return open, late
}

// Closed reports whether the sliding window win stopped accepting records at
// stream time st: st > End + Grace. Since End is inclusive, a sliding window
// still accepts records when stream time is exactly End + Grace.
func (w SlidingWindows) Closed(win Window, st int64) bool { return win.End+w.Grace < st }

// Late reports whether a record at ts is dropped entirely at stream time st.
// Kafka Streams judges by the window [ts, ts+TimeDifference]: the record is
// late when st > ts + TimeDifference + Grace. A record that is not late may
// still skip older windows it falls in that have closed.
func (w SlidingWindows) Late(ts, st int64) bool {
	return w.Closed(Window{Start: ts, End: ts + w.TimeDifference}, st)
}

// Closed reports whether session win stopped accepting records at stream
// time st: st > End + Gap + Grace. A record within Gap after End would still
// extend the session up to that point.
func (w SessionWindows) Closed(win Window, st int64) bool { return win.End+w.Gap+w.Grace < st }
