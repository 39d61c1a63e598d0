package window

import (
	"bytes"
	"math"
	"slices"
	"testing"
)

// memTimers is a timer store for tests: a sorted keyspace.
type memTimers struct{ kv sorted[[]byte] }

func (m *memTimers) TimerDue(c Clock, key []byte) (int64, bool, error) {
	i, ok := m.kv.find(TimerIndexKey(c, key))
	if !ok {
		return 0, false, nil
	}
	due, err := ParseTimerDue(m.kv.vals[i])
	return due, err == nil, err
}

func (m *memTimers) apply(ws []Write) {
	for _, w := range ws {
		if w.Delete {
			m.kv.delete(w.Key)
		} else {
			m.kv.put(w.Key, w.Value)
		}
	}
}

// due lists clock c's due timers at now, firing them as a task would.
func (m *memTimers) fire(t *testing.T, c Clock, now int64) []string {
	t.Helper()
	lo, hi := DueRange(c, now)
	i, _ := m.kv.find(lo)
	j, _ := m.kv.find(hi)
	keys := slices.Clone(m.kv.keys[i:j])
	var out []string
	for _, k := range keys {
		tm, err := ParseTimerKey(k)
		if err != nil {
			t.Fatal(err)
		}
		m.apply(FireTimer(tm))
		out = append(out, string(tm.Key))
	}
	return out
}

func (m *memTimers) set(t *testing.T, tm Timer) {
	t.Helper()
	ws, err := SetTimer(m, tm)
	if err != nil {
		t.Fatal(err)
	}
	m.apply(ws)
}

func TestTimers(t *testing.T) {
	t.Run("due timers fire in due order, each once, only when due", func(t *testing.T) {
		var m memTimers
		m.set(t, Timer{StreamClock, 30, []byte("c")})
		m.set(t, Timer{StreamClock, 10, []byte("b")})
		m.set(t, Timer{StreamClock, 10, []byte("a")})
		if got := m.fire(t, StreamClock, 9); got != nil {
			t.Fatalf("fired %v before any was due", got)
		}
		if got := m.fire(t, StreamClock, 10); !slices.Equal(got, []string{"a", "b"}) {
			t.Fatalf("fired %v at 10", got)
		}
		if got := m.fire(t, StreamClock, 100); !slices.Equal(got, []string{"c"}) {
			t.Fatalf("fired %v at 100", got)
		}
		if got := m.fire(t, StreamClock, 1000); got != nil {
			t.Fatalf("fired %v twice", got)
		}
	})
	t.Run("setting a key's timer again replaces it", func(t *testing.T) {
		var m memTimers
		m.set(t, Timer{StreamClock, 10, []byte("k")})
		m.set(t, Timer{StreamClock, 50, []byte("k")})
		if got := m.fire(t, StreamClock, 20); got != nil {
			t.Fatalf("the replaced timer fired: %v", got)
		}
		if got := m.fire(t, StreamClock, 50); !slices.Equal(got, []string{"k"}) {
			t.Fatalf("fired %v at 50", got)
		}
	})
	t.Run("setting the same timer twice writes nothing", func(t *testing.T) {
		var m memTimers
		m.set(t, Timer{WallClock, 10, []byte("k")})
		if ws, _ := SetTimer(&m, Timer{WallClock, 10, []byte("k")}); ws != nil {
			t.Fatalf("writes %v", ws)
		}
	})
	t.Run("a cancelled timer never fires; cancelling nothing writes nothing", func(t *testing.T) {
		var m memTimers
		m.set(t, Timer{StreamClock, 10, []byte("k")})
		ws, err := CancelTimer(&m, StreamClock, []byte("k"))
		if err != nil {
			t.Fatal(err)
		}
		m.apply(ws)
		if got := m.fire(t, StreamClock, 100); got != nil {
			t.Fatalf("fired %v", got)
		}
		if ws, _ := CancelTimer(&m, StreamClock, []byte("k")); ws != nil {
			t.Fatalf("writes %v", ws)
		}
	})
	t.Run("the two clocks are separate: a key may have one timer on each", func(t *testing.T) {
		var m memTimers
		m.set(t, Timer{StreamClock, 10, []byte("k")})
		m.set(t, Timer{WallClock, 5, []byte("k")})
		if got := m.fire(t, StreamClock, 7); got != nil {
			t.Fatalf("stream clock fired %v at 7", got)
		}
		if got := m.fire(t, WallClock, 7); !slices.Equal(got, []string{"k"}) {
			t.Fatalf("wall clock fired %v at 7", got)
		}
		if got := m.fire(t, StreamClock, 10); !slices.Equal(got, []string{"k"}) {
			t.Fatalf("stream clock fired %v at 10", got)
		}
	})
	t.Run("wall timers that came due while the task had no owner fire once on resume", func(t *testing.T) {
		var m memTimers
		for _, k := range []string{"x", "y", "z"} {
			m.set(t, Timer{WallClock, int64(k[0]), []byte(k)})
		}
		if got := m.fire(t, WallClock, 1_000_000); !slices.Equal(got, []string{"x", "y", "z"}) {
			t.Fatalf("fired %v", got)
		}
		if got := m.fire(t, WallClock, 2_000_000); got != nil {
			t.Fatalf("fired %v again", got)
		}
	})
	t.Run("DueAt reads the timer's own clock", func(t *testing.T) {
		if !(Timer{Clock: WallClock, Due: 5}).DueAt(0, 5) || (Timer{Clock: StreamClock, Due: 5}).DueAt(4, 100) {
			t.Fatal("DueAt mixed up the clocks")
		}
	})
}

func FuzzTimerKey(f *testing.F) {
	f.Add(uint8(1), int64(10), []byte("k"), int64(10))
	f.Add(uint8(2), int64(math.MinInt64), []byte{}, int64(math.MaxInt64))
	f.Fuzz(func(t *testing.T, clock uint8, due int64, key []byte, now int64) {
		c := Clock(1 + clock%2)
		tm := Timer{Clock: c, Due: due, Key: key}
		k := TimerKey(tm)
		got, err := ParseTimerKey(k)
		if err != nil || got.Clock != c || got.Due != due || !bytes.Equal(got.Key, key) {
			t.Fatalf("round trip of %+v = %+v, %v", tm, got, err)
		}
		lo, hi := DueRange(c, now)
		in := bytes.Compare(k, lo) >= 0 && (hi == nil || bytes.Compare(k, hi) < 0)
		if in != (due <= now) {
			t.Fatalf("timer due %d in DueRange(%d) = %v", due, now, in)
		}
		lo, hi = DueRange(3-c, now)
		if bytes.Compare(k, lo) >= 0 && (hi == nil || bytes.Compare(k, hi) < 0) {
			t.Fatalf("timer of clock %v in the other clock's range", c)
		}
		ParseTimerKey(key)
	})
}
