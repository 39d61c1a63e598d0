package window

// Finals is the set of windows that become final at one step of stream
// time, under emit-on-close: those whose Start (for sessions, whose End)
// lies in [From, To], both inclusive. The caller emits them from its store
// in order of that time, then (sessions) of Start, then of key bytes, as
// Kafka Streams' time-ordered stores return them; then it records Close as
// its last close time, with its state, so that no window is emitted twice,
// even on a new owner of the task.
//
// Only windows present in the store are emitted: a window no record ever
// reached has no result, final or not.
type Finals struct {
	From, To int64
	// Close is the close time reached: stream time minus grace (for
	// sessions, minus gap too).
	Close int64
}

// FinalsDue returns the time windows that became final since the last close
// time lastClose (NoTimestamp before the first emission), now that stream
// time is st; ok is false when there are none. A window [s, s+Size) is final
// once st >= s + Size + Grace, the moment it closes. Successive calls return
// disjoint ranges that together cover every start up to the latest close.
func (w TimeWindows) FinalsDue(lastClose, st int64) (f Finals, ok bool) {
	closeAt := st - w.Grace
	if lastClose != NoTimestamp && lastClose >= closeAt {
		return Finals{}, false
	}
	to := closeAt - w.Size
	from := int64(0)
	if lastClose != NoTimestamp {
		from = max(0, lastClose-w.Size) + 1
	}
	if to < 0 || from > to {
		return Finals{}, false
	}
	return Finals{From: from, To: to, Close: closeAt}, true
}

// FinalsDue returns the sliding windows that became final since lastClose
// at stream time st: a window [s, s+TimeDifference] is final once
// st > s + TimeDifference + Grace, the moment it closes.
func (w SlidingWindows) FinalsDue(lastClose, st int64) (f Finals, ok bool) {
	closeAt := st - w.Grace
	if lastClose != NoTimestamp && lastClose >= closeAt {
		return Finals{}, false
	}
	to := closeAt - w.TimeDifference - 1
	from := int64(0)
	if lastClose != NoTimestamp {
		from = max(0, lastClose-w.TimeDifference)
	}
	if to < 0 || from > to {
		return Finals{}, false
	}
	return Finals{From: from, To: to, Close: closeAt}, true
}

// FinalsDue returns the sessions that became final since lastClose at
// stream time st, as a range of session ends: a session [s, e] is final
// once st > e + Gap + Grace, the moment it closes.
//
// As in Kafka Streams, a final session can still be merged later: a record
// that is not late itself and lies within Gap of the session's end joins
// it, so the merged session is emitted as final once it closes in turn.
func (w SessionWindows) FinalsDue(lastClose, st int64) (f Finals, ok bool) {
	closeAt := st - w.Grace - w.Gap
	if lastClose != NoTimestamp && lastClose >= closeAt {
		return Finals{}, false
	}
	to := closeAt - 1
	from := max(0, lastClose)
	if to < 0 || from > to {
		return Finals{}, false
	}
	return Finals{From: from, To: to, Close: closeAt}, true
}
