package window

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestPropertyStreamJoinInOrderIsTheRelationalJoin: for records that
// arrive in timestamp order, ended by a record that closes every window,
// an inner join emits exactly the pairs of one key within the window (a
// brute-force join), and left and outer joins add each unmatched record of
// an outer side exactly once, alone, and no matched one: no spurious lone
// results. On any order, every pair emitted is of one key and within the
// window, and no record is emitted alone twice.
func TestPropertyStreamJoinInOrderIsTheRelationalJoin(t *testing.T) {
	rng := rand.New(rand.NewPCG(37, 2))
	for iter := range 3000 {
		w := JoinWindows{Before: rng.Int64N(8), After: rng.Int64N(8), Grace: 1 + rng.Int64N(6)}
		kind := []JoinKind{InnerJoin, LeftJoin, OuterJoin}[iter%3]
		inOrder := iter%2 == 0
		var in []joinIn
		now := int64(rng.IntN(20))
		for i := range 1 + rng.IntN(25) {
			ts := now + rng.Int64N(4)
			if !inOrder && rng.IntN(4) == 0 {
				ts = max(0, now-rng.Int64N(30))
			}
			now = max(now, ts)
			side := []byte{'L', 'R'}[rng.IntN(2)]
			in = append(in, joinIn{side, []string{"a", "b", "c"}[rng.IntN(3)], ts, fmt.Sprintf("%c%d", side+32, i)})
		}
		closing := now + w.Before + w.After + 2*w.Grace + 1
		in = append(in, joinIn{'L', "z", closing, "z"})
		j := StreamJoin[string]{Windows: w, Kind: kind}
		got := runJoin(t, j, in)
		got = slices.DeleteFunc(got, func(s string) bool { return s[0] == 'z' })

		// Brute force: pairs by (left, right) input position.
		var pairs []string
		matched := map[int]bool{}
		for i, l := range in {
			for k, r := range in {
				if l.side != 'L' || r.side != 'R' || l.key != r.key || l.key == "z" {
					continue
				}
				if d := r.ts - l.ts; d >= -w.Before && d <= w.After {
					pairs = append(pairs, fmt.Sprintf("%s:%s|%s@%d", l.key, l.val, r.val, max(l.ts, r.ts)))
					matched[i], matched[k] = true, true
				}
			}
		}
		var lone []string
		for i, r := range in {
			if r.key == "z" || matched[i] || !kind.Outer(map[byte]Side{'L': Left, 'R': Right}[r.side]) {
				continue
			}
			if r.side == 'L' {
				lone = append(lone, fmt.Sprintf("%s:%s|-@%d", r.key, r.val, r.ts))
			} else {
				lone = append(lone, fmt.Sprintf("%s:-|%s@%d", r.key, r.val, r.ts))
			}
		}
		want := append(pairs, lone...)
		if inOrder {
			if !sameMultiset(got, want) {
				t.Fatalf("%v %+v on %v:\ngot  %q\nwant %q", kind, w, in, got, want)
			}
			continue
		}
		seen := map[string]bool{}
		for _, g := range got {
			if !slices.Contains(pairs, g) && !slices.Contains(allLone(in), g) {
				t.Fatalf("%v %+v on %v: %q is neither a pair in the window nor a record alone", kind, w, in, g)
			}
			if seen[g] && !slices.Contains(pairs, g) {
				t.Fatalf("%v %+v on %v: %q emitted alone twice", kind, w, in, g)
			}
			seen[g] = true
		}
	}
}

func allLone(in []joinIn) []string {
	var out []string
	for _, r := range in {
		out = append(out, fmt.Sprintf("%s:%s|-@%d", r.key, r.val, r.ts), fmt.Sprintf("%s:-|%s@%d", r.key, r.val, r.ts))
	}
	return out
}

func sameMultiset(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
