package main

import (
	"slices"
	"strings"
	"time"
)

// state is a goroutine's state, as far as the analysis cares.
type state int

const (
	stateOther    state = iota // not yet seen, in a syscall, ...
	stateRunning               // on a CPU
	stateRunnable              // woken, waiting for a CPU
	stateWaiting               // blocked
	stateGone                  // exited
)

// transition is one goroutine's state change at a time since the trace's
// start. stack is the goroutine's own stack at the change, when it was the
// one running ("" otherwise); start is the stack the goroutine was created
// with or found in, when the trace says.
type transition struct {
	g        uint64
	at       time.Duration
	from, to state
	stack    string
	start    string
}

// gap is a span in which every worker was idle.
type gap struct {
	at, d time.Duration
}

// report is what analyze finds in one trace.
type report struct {
	workers int           // worker goroutines seen
	span    time.Duration // first to last transition
	idle    time.Duration // in all gaps together
	gaps    []gap         // the gaps of at least min, in time order
	nGaps   int           // all gaps
	// runnable is every worker's wait from being woken to running, sorted.
	runnable []time.Duration
}

// matcher recognises the workers (a frame of their stacks) and their idle
// wait (the leading frames of a worker's stack when it blocks idle).
type matcher struct {
	worker string
	idle   string
}

// analyze finds the spans in which every worker was idle at once, and the
// workers' runnable latencies, in transitions ordered by time. A worker is
// a goroutine any of whose stacks contains m.worker; it is idle from
// blocking with a stack starting with m.idle until it is woken. The gaps
// counted need at least two workers: one goroutine idle alone says nothing
// of the instance. A worker is known from its first transition in the
// trace on: one that ran throughout without blocking is not seen.
func analyze(trs []transition, m matcher, min time.Duration) report {
	type worker struct {
		idle  bool
		since time.Duration // of its last transition
		state state
	}
	var r report
	ws := map[uint64]*worker{}
	nIdle := 0
	var from time.Duration
	for i, tr := range trs {
		if i == 0 {
			from = tr.at
		}
		r.span = tr.at - from
		allBefore := len(ws) >= 2 && nIdle == len(ws)
		w := ws[tr.g]
		if w == nil {
			if !strings.Contains(tr.stack, m.worker) && !strings.Contains(tr.start, m.worker) {
				continue
			}
			w = &worker{}
			ws[tr.g] = w
			r.workers++
		}
		switch {
		case tr.to == stateGone:
			if w.idle {
				nIdle--
			}
			delete(ws, tr.g)
		case w.idle && tr.to != stateWaiting:
			w.idle = false
			nIdle--
		case !w.idle && tr.to == stateWaiting && strings.HasPrefix(tr.stack, m.idle):
			w.idle = true
			nIdle++
		}
		if tr.from == stateRunnable && tr.to == stateRunning && w.state == stateRunnable {
			r.runnable = append(r.runnable, tr.at-w.since)
		}
		w.since, w.state = tr.at, tr.to
		allAfter := len(ws) >= 2 && nIdle == len(ws)
		switch {
		case !allBefore && allAfter:
			r.gaps = append(r.gaps, gap{at: tr.at})
		case allBefore && !allAfter:
			last := &r.gaps[len(r.gaps)-1]
			last.d = tr.at - last.at
			r.idle += last.d
			r.nGaps++
			if last.d < min {
				r.gaps = r.gaps[:len(r.gaps)-1]
			}
		}
	}
	if n := len(r.gaps); n > 0 && r.gaps[n-1].d == 0 { // still open at the end
		r.gaps = r.gaps[:n-1]
	}
	slices.Sort(r.runnable)
	return r
}

// quantile returns the q-quantile of sorted ds (0 for none).
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	return ds[int(q*float64(len(ds)-1))]
}

// gcSummary is what the collector did over a trace.
type gcSummary struct {
	marks, stops             int
	marked, stopped          time.Duration
	longestMark, longestStop time.Duration
}

// summarise adds up the collector's spans.
func summarise(gc []span) gcSummary {
	var g gcSummary
	for _, s := range gc {
		if s.name == gcMark {
			g.marks++
			g.marked += s.d
			g.longestMark = max(g.longestMark, s.d)
			continue
		}
		g.stops++
		g.stopped += s.d
		g.longestStop = max(g.longestStop, s.d)
	}
	return g
}
