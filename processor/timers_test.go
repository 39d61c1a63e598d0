package processor_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rackstream/rackstream/codec"
	"github.com/rackstream/rackstream/processor"
)

// timerTopology is a topology whose records command timers: a value
// "set <clock> <ms>" sets the key's timer at ms (stream) or ms after the
// wall clock (wall), "cancel <clock>" cancels it. Fired timers emit
// "<key>@<due ms>" to "fired", and the log shows records and fires in order.
func timerTopology(t *testing.T) (*processor.TestDriver, *[]string) {
	t.Helper()
	topo := processor.New("timers")
	fired := processor.NewOutput(topo, "fired", codec.String(), codec.String())
	var log []string
	var timers *processor.Timers[string]
	var d *processor.TestDriver
	processor.NewInput(topo, "in", codec.String(), codec.String(), func(ctx *processor.Context, key, cmd string) error {
		log = append(log, "record "+key)
		var verb, clock string
		var ms int64
		fmt.Sscan(cmd, &verb, &clock, &ms)
		c := processor.StreamTime
		due := time.UnixMilli(ms)
		if clock == "wall" {
			c, due = processor.WallClock, d.WallClockTime().Add(time.Duration(ms)*time.Millisecond)
		}
		switch verb {
		case "noop":
			return nil
		case "cancel":
			return timers.Cancel(ctx, key, c)
		}
		return timers.Set(ctx, key, c, due)
	})
	timers = processor.OnTimer(topo, "alarm", codec.String(), func(ctx *processor.Context, key string, due time.Time) error {
		ms := due.UnixMilli()
		if due.After(d.WallClockTime().Add(-time.Hour)) {
			ms = due.Sub(d.WallClockTime()).Milliseconds() // wall: relative, for readable tests
		}
		log = append(log, fmt.Sprintf("fire %s@%d", key, ms))
		return fired.Emit(ctx, key, fmt.Sprintf("%s@%d", key, ms))
	})
	var err error
	if d, err = processor.NewTestDriver(topo, processor.TestDriverOptions{}); err != nil {
		t.Fatal(err)
	}
	return d, &log
}

func fires(log []string) []string {
	var out []string
	for _, l := range log {
		if s, ok := strings.CutPrefix(l, "fire "); ok {
			out = append(out, s)
		}
	}
	return out
}

func TestDurableTimers(t *testing.T) {
	t.Run("a stream-time timer fires once, after the record that passes its time", func(t *testing.T) {
		d, log := timerTopology(t)
		pipeAt(t, d, "in", "k", "set stream 100", 0)
		pipeAt(t, d, "in", "x", "noop", 99)
		if got := fires(*log); got != nil {
			t.Fatalf("fired %v before its time", got)
		}
		pipeAt(t, d, "in", "y", "noop", 150)
		pipeAt(t, d, "in", "z", "noop", 300)
		want := []string{"record k", "record x", "record y", "fire k@100", "record z"}
		if !slices.Equal(*log, want) {
			t.Fatalf("log %v, want %v", *log, want)
		}
		if out := d.Emitted("fired"); len(out) != 1 || string(out[0].Value) != "k@100" || !out[0].Timestamp.Equal(at(100)) {
			t.Fatalf("emitted %v, want k@100 stamped with its due time", out)
		}
	})
	t.Run("setting a key's timer again replaces it", func(t *testing.T) {
		d, log := timerTopology(t)
		pipeAt(t, d, "in", "k", "set stream 100", 0)
		pipeAt(t, d, "in", "k", "set stream 200", 1)
		pipeAt(t, d, "in", "x", "noop", 150)
		pipeAt(t, d, "in", "x", "noop", 250)
		if got, want := fires(*log), []string{"k@200"}; !slices.Equal(got, want) {
			t.Fatalf("fired %v, want %v", got, want)
		}
	})
	t.Run("a cancelled timer never fires", func(t *testing.T) {
		d, log := timerTopology(t)
		pipeAt(t, d, "in", "k", "set stream 100", 0)
		pipeAt(t, d, "in", "k", "cancel stream", 1)
		pipeAt(t, d, "in", "x", "noop", 1000)
		if got := fires(*log); got != nil {
			t.Fatalf("fired %v", got)
		}
	})
	t.Run("due timers fire in due order, then key order", func(t *testing.T) {
		d, log := timerTopology(t)
		pipeAt(t, d, "in", "b", "set stream 100", 0)
		pipeAt(t, d, "in", "a", "set stream 100", 0)
		pipeAt(t, d, "in", "c", "set stream 50", 0)
		pipeAt(t, d, "in", "x", "noop", 200)
		if got, want := fires(*log), []string{"c@50", "a@100", "b@100"}; !slices.Equal(got, want) {
			t.Fatalf("fired %v, want %v", got, want)
		}
	})
	t.Run("a key has one timer per clock", func(t *testing.T) {
		d, log := timerTopology(t)
		pipeAt(t, d, "in", "k", "set stream 100", 0)
		pipeAt(t, d, "in", "k", "set wall 60000", 0)
		pipeAt(t, d, "in", "x", "noop", 100)
		if err := d.AdvanceWallClockTime(time.Minute); err != nil {
			t.Fatal(err)
		}
		if got, want := fires(*log), []string{"k@100", "k@0"}; !slices.Equal(got, want) {
			t.Fatalf("fired %v, want %v (the wall one at its due time, 0 ms from now)", got, want)
		}
	})
	t.Run("a wall-clock timer fires when the wall clock passes it, with no record", func(t *testing.T) {
		d, log := timerTopology(t)
		pipeAt(t, d, "in", "k", "set wall 30000", 0)
		if err := d.AdvanceWallClockTime(29 * time.Second); err != nil {
			t.Fatal(err)
		}
		if got := fires(*log); got != nil {
			t.Fatalf("fired %v before its time", got)
		}
		if err := d.AdvanceWallClockTime(2 * time.Second); err != nil {
			t.Fatal(err)
		}
		if err := d.AdvanceWallClockTime(time.Hour); err != nil {
			t.Fatal(err)
		}
		if got, want := fires(*log), []string{"k@-1000"}; !slices.Equal(got, want) {
			t.Fatalf("fired %v, want %v (once, a second after its time)", got, want)
		}
	})
}

func TestTimerHandlerWritesStoresAndSetsTheNextTimer(t *testing.T) {
	// A heartbeat monitor: each beat resets the key's deadline; a key
	// silent for 30 s of stream time is reported once, and counted.
	topo := processor.New("heartbeats")
	silent := processor.NewStore(topo, "silent", codec.String(), codec.Int64())
	alerts := processor.NewOutput(topo, "alerts", codec.String(), codec.String())
	var timers *processor.Timers[string]
	processor.NewInput(topo, "beats", codec.String(), codec.String(), func(ctx *processor.Context, host, _ string) error {
		return timers.Set(ctx, host, processor.StreamTime, ctx.Timestamp().Add(30*time.Second))
	})
	timers = processor.OnTimer(topo, "deadline", codec.String(), func(ctx *processor.Context, host string, due time.Time) error {
		n, _, err := silent.Get(ctx, host)
		if err != nil {
			return err
		}
		if err := silent.Put(ctx, host, n+1); err != nil {
			return err
		}
		return alerts.Emit(ctx, host, "silent since "+due.Add(-30*time.Second).Format(time.TimeOnly))
	})
	d, err := processor.NewTestDriver(topo, processor.TestDriverOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sec := func(s int64) int64 { return s * 1000 }
	pipeAt(t, d, "beats", "a", "", sec(0))
	pipeAt(t, d, "beats", "b", "", sec(10))
	pipeAt(t, d, "beats", "a", "", sec(20))  // a's deadline moves to 50 s
	pipeAt(t, d, "beats", "c", "", sec(45))  // passes b's deadline (40 s), not a's
	pipeAt(t, d, "beats", "c", "", sec(60))  // passes a's
	pipeAt(t, d, "beats", "b", "", sec(61))  // b is back: 91 s
	pipeAt(t, d, "beats", "c", "", sec(100)) // passes b's; c's own beat moved its deadline first
	got, err := processor.ReadOutput(d, alerts)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, kv := range got {
		lines = append(lines, kv.Key+" "+kv.Value)
	}
	want := []string{"b silent since 00:00:10", "a silent since 00:00:20", "b silent since 00:01:01"}
	if !slices.Equal(lines, want) {
		t.Fatalf("alerts %q, want %q", lines, want)
	}
	if n, _, _ := processor.Lookup(d, silent, "b"); n != 2 {
		t.Fatalf("b silent %d times in the store, want 2", n)
	}
}

func TestTimersOfAnotherTopologyAreAnError(t *testing.T) {
	other := processor.New("other")
	theirs := processor.OnTimer(other, "t", codec.String(), func(*processor.Context, string, time.Time) error { return nil })
	topo := processor.New("mine")
	var got error
	processor.NewInput(topo, "in", codec.String(), codec.String(), func(ctx *processor.Context, k, _ string) error {
		got = theirs.Set(ctx, k, processor.StreamTime, time.UnixMilli(1))
		return nil
	})
	d, err := processor.NewTestDriver(topo, processor.TestDriverOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pipeAt(t, d, "in", "k", "", 0)
	if got == nil || !strings.Contains(got.Error(), "belongs to topology other") {
		t.Fatalf("Set = %v, want an error naming the other topology", got)
	}
}
