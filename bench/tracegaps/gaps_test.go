package main

import (
	"bytes"
	"runtime"
	"runtime/trace"
	"slices"
	"sync"
	"testing"
	"time"
)

var testMatcher = matcher{worker: "task.run", idle: "select < task.run"}

const ms = time.Millisecond

// run and idle are a worker's transitions in the synthetic traces: to
// running (woken and scheduled), and to waiting in its idle select.
func run(g uint64, at time.Duration) transition {
	return transition{g: g, at: at, from: stateRunnable, to: stateRunning, stack: "", start: "x < task.run"}
}
func woken(g uint64, at time.Duration) transition {
	return transition{g: g, at: at, from: stateWaiting, to: stateRunnable, start: "x < task.run"}
}
func idle(g uint64, at time.Duration) transition {
	return transition{g: g, at: at, from: stateRunning, to: stateWaiting, stack: "select < task.run < main"}
}
func blocked(g uint64, at time.Duration) transition { // waiting, but not idle: a lock
	return transition{g: g, at: at, from: stateRunning, to: stateWaiting, stack: "lock < write < task.run"}
}

// TestAnalyzeFindsWhenEveryWorkerIsIdle: the specification, on synthetic
// transitions.
func TestAnalyzeFindsWhenEveryWorkerIsIdle(t *testing.T) {
	for _, tc := range []struct {
		name     string
		trs      []transition
		gaps     []gap // of at least 20 ms
		idle     time.Duration
		nGaps    int
		runnable []time.Duration
	}{
		{"two workers idle together for 30 ms", []transition{
			idle(1, 0), idle(2, 10*ms), woken(1, 40*ms), run(1, 41*ms),
		}, []gap{{10 * ms, 30 * ms}}, 30 * ms, 1, []time.Duration{ms}},
		{"a short gap counts in the idle time, not in the list", []transition{
			idle(1, 0), idle(2, 10*ms), woken(2, 15*ms), run(2, 18*ms), idle(2, 20*ms), woken(1, 60*ms),
		}, []gap{{20 * ms, 40 * ms}}, 45 * ms, 2, []time.Duration{3 * ms}},
		{"a worker blocked on a lock is not idle", []transition{
			idle(1, 0), blocked(2, 10*ms), woken(1, 50*ms),
		}, nil, 0, 0, nil},
		{"one worker alone is never a gap", []transition{
			idle(1, 0), woken(1, 50*ms),
		}, nil, 0, 0, nil},
		{"a worker that exits leaves the gap to the others", []transition{
			idle(1, 0), idle(2, 0), idle(3, 5*ms), {g: 3, at: 10 * ms, from: stateWaiting, to: stateGone}, woken(1, 40*ms),
		}, []gap{{0, 40 * ms}}, 40 * ms, 1, nil},
		{"a worker that exits while the others are idle opens a gap", []transition{
			idle(1, 0), idle(2, 0), run(3, 5*ms), {g: 3, at: 10 * ms, from: stateRunning, to: stateGone}, woken(1, 40*ms),
		}, []gap{{10 * ms, 30 * ms}}, 35 * ms, 2, nil}, // 0-5 ms too: worker 3 is known from 5 ms on
		{"a worker first seen in a gap ends it, and the gap resumes when it idles", []transition{
			idle(1, 0), idle(2, 0), run(3, 30*ms), idle(3, 31*ms), woken(1, 61*ms),
		}, []gap{{0, 30 * ms}, {31 * ms, 30 * ms}}, 60 * ms, 2, nil},
		{"a gap still open at the end is not listed", []transition{
			idle(1, 0), idle(2, 0), {g: 9, at: 100 * ms, start: "other"},
		}, nil, 0, 0, nil},
		{"goroutines without the worker frame are ignored", []transition{
			idle(1, 0), {g: 7, at: 5 * ms, from: stateRunning, to: stateWaiting, stack: "select < poll"}, idle(2, 10*ms), woken(2, 40*ms),
		}, []gap{{10 * ms, 30 * ms}}, 30 * ms, 1, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := analyze(tc.trs, testMatcher, 20*ms)
			if !slices.Equal(r.gaps, tc.gaps) || r.idle != tc.idle || r.nGaps != tc.nGaps || !slices.Equal(r.runnable, tc.runnable) {
				t.Errorf("gaps %v, idle %v in %d, runnable %v; want %v, %v in %d, %v", r.gaps, r.idle, r.nGaps, r.runnable, tc.gaps, tc.idle, tc.nGaps, tc.runnable)
			}
		})
	}
}

// TestReadsARealTrace: three goroutines of this test, stand-ins for tasks,
// wait in a select for work that comes only after 60 ms; the trace of it,
// read back, has them all idle together for about that long.
func TestReadsARealTrace(t *testing.T) {
	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		t.Fatal(err)
	}
	work := make(chan struct{})
	var ready, done sync.WaitGroup
	for range 3 {
		ready.Add(1)
		done.Add(1)
		go standInTask(work, &ready, &done)
	}
	ready.Wait()
	deadline := time.Now().Add(60 * ms)
	for time.Now().Before(deadline) { // the pace of the test, not a synchronisation
		time.Sleep(ms)
	}
	close(work)
	done.Wait()
	runtime.GC() // a mark phase and its stop-the-world pauses
	trace.Stop()

	trs, gc, start, err := readTrace(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if start.IsZero() || time.Since(start) > time.Minute {
		t.Errorf("trace start %v: want the wall clock of a moment ago", start)
	}
	r := analyze(trs, matcher{worker: "tracegaps.standInTask", idle: "runtime.selectgo < tracegaps.standInTask"}, 40*ms)
	if r.workers != 3 || len(r.gaps) != 1 || r.gaps[0].d < 50*ms || r.gaps[0].d > 10*time.Second {
		t.Fatalf("workers %d, gaps %v: want 3 workers idle together for about 60 ms", r.workers, r.gaps)
	}
	if g := summarise(gc); g.marks < 1 || g.stops < 2 || g.marked <= 0 || g.longestStop <= 0 {
		t.Errorf("the collector's spans %+v (%+v): want runtime.GC's mark phase and its two stop-the-world pauses", gc, g)
	}
}

// TestSummariseAddsUpTheCollectorsSpans: marks and stops apart, each with
// its total and longest.
func TestSummariseAddsUpTheCollectorsSpans(t *testing.T) {
	g := summarise([]span{
		{gcMark, 0, 30 * ms}, {"stop-the-world (GC mark termination)", 30 * ms, 2 * ms},
		{gcMark, 100 * ms, 50 * ms}, {"stop-the-world (GC sweep termination)", 99 * ms, ms},
	})
	want := gcSummary{marks: 2, stops: 2, marked: 80 * ms, stopped: 3 * ms, longestMark: 50 * ms, longestStop: 2 * ms}
	if g != want {
		t.Errorf("summarise = %+v, want %+v", g, want)
	}
}

// standInTask waits in a select, as a task does for its next batch.
func standInTask(work chan struct{}, ready, done *sync.WaitGroup) {
	defer done.Done()
	ready.Done()
	tick := time.NewTicker(time.Hour)
	defer tick.Stop()
	select {
	case <-work:
	case <-tick.C:
	}
}
