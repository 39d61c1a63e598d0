package processor

import (
	"testing"
	"time"
)

func TestRebuildBackoff(t *testing.T) {
	const first, max = time.Second, 30 * time.Second
	for _, c := range []struct {
		name            string
		cur, ranFor     time.Duration
		assigned        bool
		wantWait, wantN time.Duration
	}{
		{"first failure waits first and doubles", first, 0, false, first, 2 * first},
		{"consecutive failures double", 8 * first, time.Second, false, 8 * first, 16 * first},
		{"doubling stops at max", 16 * first, time.Second, false, 16 * first, max},
		{"at max it stays", max, time.Second, false, max, max},
		{"a session that received an assignment starts over", max, 5 * time.Second, true, first, 2 * first},
		{"a session that ran for twice max starts over", max, 61 * time.Second, false, first, 2 * first},
		{"exactly twice max is not yet healthy", 4 * first, 60 * time.Second, false, 4 * first, 8 * first},
	} {
		t.Run(c.name, func(t *testing.T) {
			wait, next := rebuildBackoff(c.cur, first, max, c.ranFor, c.assigned)
			if wait != c.wantWait || next != c.wantN {
				t.Errorf("rebuildBackoff(%v, ran %v, assigned %v) = wait %v, next %v; want %v, %v",
					c.cur, c.ranFor, c.assigned, wait, next, c.wantWait, c.wantN)
			}
		})
	}
	t.Run("zero backoff rebuilds at once", func(t *testing.T) {
		if wait, next := rebuildBackoff(0, 0, 0, 0, false); wait != 0 || next != 0 {
			t.Errorf("got wait %v, next %v; want 0, 0", wait, next)
		}
	})
}
