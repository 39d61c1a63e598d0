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
