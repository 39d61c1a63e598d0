package cluster

import "testing"

// TestReservedPortsAreNotHandedOutTwice: a run of ports reserved (by this
// process or another: flocks on separate opens conflict either way) is
// skipped by the next search, even though nothing listens on it, and is
// handed out again once released.
func TestReservedPortsAreNotHandedOutTwice(t *testing.T) {
	const from, n = 29000, 4
	a, releaseA, err := reservePorts(from, n)
	if err != nil {
		t.Fatal(err)
	}
	b, releaseB, err := reservePorts(a, n)
	if err != nil {
		t.Fatal(err)
	}
	defer releaseB()
	if b < a+n {
		t.Fatalf("second reservation from %d got %d, inside the first's run %d-%d", a, b, a, a+n-1)
	}
	releaseA()
	c, releaseC, err := reservePorts(a, n)
	if err != nil {
		t.Fatal(err)
	}
	defer releaseC()
	if c != a {
		t.Fatalf("after release, the search from %d got %d, want the released run back", a, c)
	}
}
