package window

import "testing"

// records decodes fuzz bytes as records: each pair of bytes is a key (one
// of three) and a timestamp (0..85).
func records(data []byte) []rec {
	var in []rec
	for i := 0; i+1 < len(data) && len(in) < 40; i += 2 {
		in = append(in, rec{string(rune('a' + data[i]%3)), int64(data[i+1] % 86)})
	}
	return in
}

// FuzzSlidingAggregation checks any record order, never late, against the
// definition of sliding windows (checkBruteForceSliding).
func FuzzSlidingAggregation(f *testing.F) {
	f.Add(uint8(10), []byte{0, 20, 0, 30, 0, 25})
	f.Add(uint8(3), []byte{1, 3, 1, 1, 2, 0, 1, 7, 1, 4})
	f.Fuzz(func(t *testing.T, diff uint8, data []byte) {
		w := Sliding(1 + int64(diff%20)).WithGrace(1000)
		in := records(data)
		checkBruteForceSliding(t, w.TimeDifference, in, newSlidingDriver(t, w, EmitOnUpdate).run(in...).stored())
	})
}

// FuzzSessionAggregation checks any record order and lateness against the
// definition of sessions (checkSessions).
func FuzzSessionAggregation(f *testing.F) {
	f.Add(uint8(10), uint8(0), []byte{0, 0, 0, 20, 0, 10})
	f.Add(uint8(5), uint8(2), []byte{1, 80, 1, 85, 2, 100, 1, 95})
	f.Fuzz(func(t *testing.T, gap, grace uint8, data []byte) {
		w := Session(1 + int64(gap%20)).WithGrace(int64(grace % 20))
		in := records(data)
		checkSessions(t, w, in, newSessionDriver(t, w, EmitOnUpdate).run(in...))
	})
}
