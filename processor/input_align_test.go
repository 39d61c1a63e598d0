package processor

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// inputs returns alignment state over inputs a and b.
func inputs(idle time.Duration) *inputAlign {
	return &inputAlign{idle: idle, limit: 100, inputs: []*inputQueue{{topic: "a"}, {topic: "b"}}}
}

func batch(topic string, recs ...*kgo.Record) kgo.FetchTopicPartition {
	return kgo.FetchTopicPartition{Topic: topic, FetchPartition: kgo.FetchPartition{Records: recs}}
}

// drain processes what decide allows at now and returns the timestamps (s).
func drain(t *testing.T, a *inputAlign, now time.Time) (order []int, step alignStep) {
	t.Helper()
	for {
		step, i := a.decide(now, false)
		if step != stepProcess {
			return order, step
		}
		order = append(order, int(a.pop(i)[0].Timestamp.Sub(t0)/time.Second))
	}
}

func TestInputAlignTakesRecordsInTimestampOrderAcrossInputs(t *testing.T) {
	a := inputs(0)
	a.add(batch("a", at(0, 1), at(1, 4), at(2, 5)))
	a.add(batch("b", at(0, 2), at(1, 3), at(2, 5)))
	order, step := drain(t, a, sec(100))
	// Ties go to the input declared first; once b is empty, a's records
	// go on (no idle wait).
	if want := []int{1, 2, 3, 4, 5, 5}; !slices.Equal(order, want) || step != stepApply {
		t.Fatalf("order %v (then %v), want %v then nothing waiting", order, step, want)
	}
}

func TestInputAlignWaitsForAQuietInputOncePerQuietSpell(t *testing.T) {
	a := inputs(10 * time.Second)
	a.add(batch("a", at(0, 1), at(1, 2)))
	if step, _ := a.decide(sec(100), false); step != stepWait || !a.until.Equal(sec(110)) {
		t.Fatalf("decide with b quiet = %v until %v, want wait until 110s", step, a.until)
	}
	if step, _ := a.decide(sec(105), true); step != stepProcess {
		t.Fatalf("decide with the queue full = %v, want process (enforced)", step)
	}
	// b's records arrive in time: merged.
	a.add(batch("b", at(0, 1)))
	order, _ := drain(t, a, sec(105))
	if want := []int{1, 1}; !slices.Equal(order, want) {
		t.Fatalf("order %v, want %v: a's 1s, b's 1s, then wait for b again", order, want)
	}
	if step, _ := a.decide(sec(105), false); step != stepWait || !a.until.Equal(sec(115)) {
		t.Fatalf("b quiet again = %v until %v, want a new wait until 115s", step, a.until)
	}
	// The deadline passes: a goes on, and does not wait for b again
	// until b delivers.
	order, step := drain(t, a, sec(115))
	if want := []int{2}; !slices.Equal(order, want) || step != stepApply {
		t.Fatalf("after the deadline: %v then %v, want %v then nothing waiting", order, step, want)
	}
	a.add(batch("a", at(2, 3)))
	if order, _ := drain(t, a, sec(116)); !slices.Equal(order, []int{3}) {
		t.Fatalf("a quiet spell of b waits once: got %v", order)
	}
}

func TestInputAlignGoesOnWhenTooManyRecordsWait(t *testing.T) {
	a := inputs(time.Hour)
	a.limit = 2
	a.add(batch("a", at(0, 1), at(1, 2), at(2, 3)))
	if step, i := a.decide(sec(0), false); step != stepProcess || i != 0 {
		t.Fatalf("decide with 3 waiting over a limit of 2 = %v %d, want process a", step, i)
	}
}
