package processor_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rackstream/rackstream/codec"
	"github.com/rackstream/rackstream/processor"
)

func TestStreamTimePunctuatorRunsAfterTheRecordThatPassesItsTime(t *testing.T) {
	topo := processor.New("punct-st")
	var log []string
	processor.NewInput(topo, "in", codec.String(), codec.String(), func(ctx *processor.Context, k, _ string) error {
		log = append(log, "record "+k)
		return nil
	})
	var ticks []int64
	processor.Schedule(topo, "tick", 100*time.Millisecond, processor.StreamTime, func(ctx *processor.Context, now time.Time) error {
		ticks = append(ticks, now.UnixMilli())
		log = append(log, "tick")
		return nil
	})
	d, err := processor.NewTestDriver(topo, processor.TestDriverOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Aligned to the epoch: the first record punctuates; then each
	// multiple of 100 once, missed ones not made up, late records never.
	for _, ms := range []int64{50, 99, 250, 120, 299, 300} {
		pipeAt(t, d, "in", "r"+time.UnixMilli(ms).UTC().Format(".000"), "", ms)
	}
	if want := []int64{50, 250, 300}; !slices.Equal(ticks, want) {
		t.Fatalf("punctuated at %v, want %v", ticks, want)
	}
	if log[0] != "record r.050" || log[1] != "tick" {
		t.Fatalf("order %v: the punctuation follows the record that made it due", log)
	}
}

func TestWallClockPunctuatorRunsWhenTheDriverAdvancesTheWallClock(t *testing.T) {
	topo := processor.New("punct-wall")
	processor.NewInput(topo, "in", codec.String(), codec.String(), func(*processor.Context, string, string) error { return nil })
	out := processor.NewOutput(topo, "beats", codec.String(), codec.Int64())
	type tick struct {
		task int32
		at   time.Duration // since the driver started
	}
	var ticks []tick
	d, err := func() (*processor.TestDriver, error) {
		var start time.Time
		processor.Schedule(topo, "beat", 10*time.Second, processor.WallClock, func(ctx *processor.Context, now time.Time) error {
			ticks = append(ticks, tick{ctx.Partition(), now.Sub(start)})
			return out.Emit(ctx, "beat", now.UnixMilli())
		})
		d, err := processor.NewTestDriver(topo, processor.TestDriverOptions{Partitions: 2})
		if d != nil {
			start = d.WallClockTime()
		}
		return d, err
	}()
	if err != nil {
		t.Fatal(err)
	}
	for _, by := range []time.Duration{5 * time.Second, 5 * time.Second, 25 * time.Second, 5 * time.Second} {
		if err := d.AdvanceWallClockTime(by); err != nil {
			t.Fatal(err)
		}
	}
	// Every task runs it: at 10 s, then once at 35 s for the two
	// intervals missed, then at 40 s.
	want := []tick{{0, 10 * time.Second}, {1, 10 * time.Second}, {0, 35 * time.Second}, {1, 35 * time.Second}, {0, 40 * time.Second}, {1, 40 * time.Second}}
	if !slices.Equal(ticks, want) {
		t.Fatalf("ticks %v, want %v", ticks, want)
	}
	emitted := d.Emitted("beats")
	if len(emitted) != len(want) || !emitted[0].Timestamp.Equal(d.WallClockTime().Add(-30*time.Second)) {
		t.Fatalf("emitted %d records, the first stamped %v: want %d, stamped with their punctuation's time", len(emitted), emitted[0].Timestamp, len(want))
	}
}

func TestFailingPunctuatorFollowsTheErrorPolicy(t *testing.T) {
	for _, tc := range []struct {
		policy  processor.ErrorPolicy
		wantErr bool
	}{
		{processor.PolicyFail, true},
		{processor.PolicySkip, false},
		{processor.PolicyDeadLetter, false},
	} {
		t.Run(string(tc.policy), func(t *testing.T) {
			topo := processor.New("punct-fail")
			processor.NewInput(topo, "in", codec.String(), codec.String(), func(*processor.Context, string, string) error { return nil })
			calls := 0
			processor.Schedule(topo, "boom", time.Second, processor.WallClock, func(*processor.Context, time.Time) error {
				calls++
				return errors.New("boom")
			})
			d, err := processor.NewTestDriver(topo, processor.TestDriverOptions{ErrorPolicy: tc.policy, Retry: processor.Retry{Attempts: 2}})
			if err != nil {
				t.Fatal(err)
			}
			err = d.AdvanceWallClockTime(time.Second)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want an error: %v", err, tc.wantErr)
			}
			if calls != 2 {
				t.Fatalf("called %d times, want 2 (retried once)", calls)
			}
		})
	}
}

func TestScheduleRejectsBadDeclarations(t *testing.T) {
	topo := processor.New("punct-bad")
	processor.NewInput(topo, "in", codec.String(), codec.String(), func(*processor.Context, string, string) error { return nil })
	noop := func(*processor.Context, time.Time) error { return nil }
	processor.Schedule(topo, "fast", time.Microsecond, processor.WallClock, noop)
	processor.Schedule(topo, "bad name", time.Second, processor.WallClock, noop)
	processor.Schedule(topo, "twice", time.Second, processor.WallClock, noop)
	processor.Schedule(topo, "twice", time.Second, processor.StreamTime, noop)
	processor.Schedule(topo, "nofunc", time.Second, processor.StreamTime, nil)
	err := topo.Validate()
	for _, want := range []string{`"fast"`, `"bad name"`, `"twice" declared twice`, `"nofunc"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("Validate() = %v, want it to name %s", err, want)
		}
	}
}
