package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"golang.org/x/exp/trace"
)

// span is a range of the trace: a garbage collector's phase.
type span struct {
	name  string
	at, d time.Duration
}

// readTrace turns a Go execution trace into goroutine transitions and the
// garbage collector's concurrent mark phases and stop-the-world pauses,
// and returns the wall-clock time of its start (zero when the trace has
// no clock snapshot).
func readTrace(r io.Reader) (trs []transition, gc []span, start time.Time, err error) {
	tr, err := trace.NewReader(r)
	if err != nil {
		return nil, nil, time.Time{}, fmt.Errorf("read trace: %w", err)
	}
	var first trace.Time
	open := map[string]time.Duration{} // a GC range's name: when it began
	for {
		ev, err := tr.ReadEvent()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, time.Time{}, fmt.Errorf("read trace event %d: %w", len(trs), err)
		}
		if first == 0 {
			first = ev.Time()
		}
		if ev.Kind() == trace.EventSync && start.IsZero() {
			if cs := ev.Sync().ClockSnapshot; cs != nil {
				start = cs.Wall.Add(-time.Duration(cs.Trace - first))
			}
		}
		switch ev.Kind() {
		case trace.EventRangeBegin, trace.EventRangeActive:
			if name := ev.Range().Name; isGC(name) {
				open[name] = time.Duration(ev.Time() - first)
			}
		case trace.EventRangeEnd:
			name := ev.Range().Name
			if at, ok := open[name]; ok {
				gc = append(gc, span{name: name, at: at, d: time.Duration(ev.Time()-first) - at})
				delete(open, name)
			}
		}
		if ev.Kind() != trace.EventStateTransition {
			continue
		}
		st := ev.StateTransition()
		if st.Resource.Kind != trace.ResourceGoroutine {
			continue
		}
		from, to := st.Goroutine()
		t := transition{g: uint64(st.Resource.Goroutine()), at: time.Duration(ev.Time() - first),
			from: goState(from), to: goState(to), start: frames(st.Stack)}
		if from == trace.GoRunning {
			t.stack = frames(ev.Stack()) // the goroutine's own: it was running
		}
		trs = append(trs, t)
	}
	return trs, gc, start, nil
}

// isGC reports whether a range is one of the collector's: its concurrent
// mark phase or a stop-the-world pause.
func isGC(name string) bool {
	return name == gcMark || strings.HasPrefix(name, "stop-the-world")
}

// gcMark is the runtime's name of the concurrent mark phase's range.
const gcMark = "GC concurrent mark phase"

func goState(s trace.GoState) state {
	switch s {
	case trace.GoRunning:
		return stateRunning
	case trace.GoRunnable:
		return stateRunnable
	case trace.GoWaiting:
		return stateWaiting
	case trace.GoNotExist:
		return stateGone
	}
	return stateOther
}

// frames renders a stack's functions, innermost first, each without its
// package path, separated by " < ".
func frames(s trace.Stack) string {
	var b strings.Builder
	for f := range s.Frames() {
		fn := f.Func
		if i := strings.LastIndex(fn, "/"); i >= 0 {
			fn = fn[i+1:]
		}
		if b.Len() > 0 {
			b.WriteString(" < ")
		}
		b.WriteString(fn)
	}
	return b.String()
}
