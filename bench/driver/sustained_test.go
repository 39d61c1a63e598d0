package main

import "testing"

// TestSustainedSearchSteps: a rate is kept up with when the instances
// processed at least 95% of what was acknowledged in its window; after one
// they fell behind in, the next is below what they did process, and at
// most 90% of the last, so the search ends.
func TestSustainedSearchSteps(t *testing.T) {
	for _, c := range []struct {
		name     string
		step     sustainStep
		keptUp   bool
		nextRate float64
	}{
		{"processed all it was given", sustainStep{rate: 200_000, produced: 199_000, processed: 199_500}, true, 0},
		{"within 5%", sustainStep{rate: 200_000, produced: 200_000, processed: 190_000}, true, 0},
		{"behind: next below what it processed", sustainStep{rate: 200_000, produced: 200_000, processed: 150_000}, false, 142_500},
		{"just behind: next at 90% of the rate", sustainStep{rate: 200_000, produced: 200_000, processed: 189_900}, false, 180_000},
		{"nothing produced is not keeping up", sustainStep{rate: 200_000}, false, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := c.step.keptUp(); got != c.keptUp {
				t.Fatalf("keptUp = %v, want %v", got, c.keptUp)
			}
			if !c.keptUp && c.nextRate > 0 {
				if got := nextRate(c.step); got != c.nextRate {
					t.Fatalf("nextRate = %v, want %v", got, c.nextRate)
				}
			}
		})
	}
}

// TestSustainedSearchGoesBothWays: the search goes up while the instances
// keep up and nothing fell behind, down while they fall behind and nothing
// kept up, and stops where the two meet (the highest rate kept up with) or
// where the driver's producer could not reach the rate asked.
func TestSustainedSearchGoesBothWays(t *testing.T) {
	kept := func(rate float64) sustainStep { return sustainStep{rate: rate, produced: rate, processed: rate} }
	behind := func(rate float64) sustainStep { return sustainStep{rate: rate, produced: rate, processed: 0.8 * rate} }
	for _, c := range []struct {
		name  string
		steps []sustainStep
		next  float64 // when not done
		done  bool
		rate  float64 // when done
	}{
		{"kept up at the first: up", []sustainStep{kept(100_000)}, 130_000, false, 0},
		{"kept up twice: up again", []sustainStep{kept(100_000), kept(130_000)}, 169_000, false, 0},
		{"behind above a kept-up rate: that rate", []sustainStep{kept(100_000), kept(130_000), behind(169_000)}, 0, true, 130_000},
		{"behind at the first: down", []sustainStep{behind(200_000)}, 152_000, false, 0},
		{"kept up after falling behind: that rate", []sustainStep{behind(200_000), kept(152_000)}, 0, true, 152_000},
		{"the producer fell short of the rate: at least what it gave",
			[]sustainStep{kept(100_000), {rate: 130_000, produced: 110_000, processed: 110_000}}, 0, true, 110_000},
	} {
		t.Run(c.name, func(t *testing.T) {
			next, done, rate, ended := searchNext(c.steps)
			if done != c.done || done && (rate != c.rate || ended == "") || !done && next != c.next {
				t.Fatalf("searchNext = next %v, done %v, rate %v (%q); want next %v, done %v, rate %v", next, done, rate, ended, c.next, c.done, c.rate)
			}
		})
	}
}
