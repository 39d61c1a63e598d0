package cluster

import (
	"fmt"
	"sync"
	"time"
)

// CheckpointWatcher polls every running instance's /v1/status and checks
// that no replica's checkpoint (position: the next changelog offset to
// read) ever goes backwards, per instance, store and task, across the
// instance's lives: a restarted instance must resume from at least where it
// stopped, as Kafka's standby system test checks. (An instance whose state
// directory the test deletes starts again from nothing: don't watch that.)
type CheckpointWatcher struct {
	g    *Group
	stop chan struct{}
	done chan struct{}

	mu        sync.Mutex       // guards highest, regressions and polls
	highest   map[string]int64 // instance/store/task -> highest position seen
	regressed []string
	polls     int
}

// WatchCheckpoints starts a watcher polling every interval.
func WatchCheckpoints(g *Group, interval time.Duration) *CheckpointWatcher {
	w := &CheckpointWatcher{g: g, stop: make(chan struct{}), done: make(chan struct{}), highest: map[string]int64{}}
	g.t.Cleanup(func() { w.Stop() })
	go func() {
		defer close(w.done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-tick.C:
				w.poll()
			}
		}
	}()
	return w
}

func (w *CheckpointWatcher) poll() {
	for _, in := range w.g.Up() {
		if in.Isolated() {
			continue
		}
		var st Status
		if code, err := GetJSON(in.URL()+"/v1/status", &st); err != nil || code != 200 {
			continue
		}
		w.mu.Lock()
		w.polls++
		for _, r := range st.Replicas {
			if r.Position <= 0 { // not opened or nothing applied yet
				continue
			}
			k := fmt.Sprintf("%s/%s/%d", in.Name, r.Store, r.Task)
			if h, ok := w.highest[k]; ok && r.Position < h {
				w.regressed = append(w.regressed, fmt.Sprintf("%s: %d after %d (%s)", k, r.Position, h, r.Role))
				continue
			}
			w.highest[k] = r.Position
		}
		w.mu.Unlock()
	}
}

// Stop stops the watcher and returns the regressions it saw ("instance/
// store/task: position after highest (role)") and how many replicas it
// followed.
func (w *CheckpointWatcher) Stop() (regressions []string, replicas int) {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.regressed...), len(w.highest)
}
