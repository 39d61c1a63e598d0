package assignor

import (
	"fmt"
	"math/rand"
	"syscall"
	"testing"
)

// cpuTime returns the user and system CPU time of the process, in ns.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// Tag layouts of the benchmark's 1,000 clients, over the keys zone, cluster
// and rack:
//   - layered: 3 zones x 4 clusters x 10 racks, 120 classes of identical
//     tags (a realistic deployment);
//   - unique-rack: a rack per client, 1000 classes (a host-like key);
//   - random: each key drawn from 30 values, about 1000 classes whose values
//     are all shared (no symmetry for the search to exploit).
const (
	layered    = "120classes"
	uniqueRack = "1000classes"
	random     = "1000random"
)

func benchClients(n int, layout string) []Client {
	r := rand.New(rand.NewSource(1))
	cs := make([]Client, n)
	for i := range cs {
		tags := map[string]string{
			"zone": fmt.Sprintf("eu-central-1%c", 'a'+i%3), "cluster": fmt.Sprintf("k%d", (i/3)%4), "rack": fmt.Sprintf("r%d", (i/12)%10)}
		switch layout {
		case uniqueRack:
			tags["rack"] = fmt.Sprintf("r%d", i)
		case random:
			tags = map[string]string{"zone": fmt.Sprint("z", r.Intn(30)), "cluster": fmt.Sprint("k", r.Intn(30)), "rack": fmt.Sprint("r", r.Intn(30))}
		}
		cs[i] = Client{ID: fmt.Sprintf("n%04d", i), Capacity: 1, Tags: tags}
	}
	return cs
}

func benchInput(layout string) Input {
	in := Input{Settings: DefaultSettings(), Tasks: 10000, Clients: benchClients(1000, layout)}
	in.NumStandbyReplicas, in.RackAwareAssignmentTags = 2, []string{"zone", "cluster", "rack"}
	return in
}

// BenchmarkAssign1000x10000 plans 1,000 clients x 10,000 tasks x 2 standbys
// x 3 tag dimensions, for each tag layout: from scratch; the steady state
// (the previous plan fed back with every replica caught up: a rebalance
// that changes nothing); and after losing a third of the clients (zone
// eu-central-1b in the zoned layouts), the survivors' previous roles and
// lags as input.
func BenchmarkAssign1000x10000(b *testing.B) {
	for _, name := range []string{layered, uniqueRack, random} {
		fresh := benchInput(name)
		p, err := Assign(fresh)
		if err != nil {
			b.Fatal(err)
		}
		steady := feedBack(fresh, p)
		lost := steady
		lost.Clients = nil
		for i, c := range steady.Clients {
			if i%3 != 1 { // zone eu-central-1b, or a third of the clients
				lost.Clients = append(lost.Clients, c)
			}
		}
		for _, bc := range []struct {
			name string
			in   Input
		}{{"fresh", fresh}, {"steady", steady}, {"zone-lost", lost}} {
			b.Run(name+"/"+bc.name, func(b *testing.B) {
				b.ReportAllocs()
				cpu0 := cpuTime()
				for b.Loop() {
					if _, err := Assign(bc.in); err != nil {
						b.Fatal(err)
					}
				}
				// CPU time of the process per plan: on a shared machine the
				// wall-clock ns/op also counts waiting for a core.
				b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}

// BenchmarkAssignStandbyCount plans the 1,000 x 10,000 scenario from scratch
// with 1 to 4 standbys per task: the exact search grows with the count.
func BenchmarkAssignStandbyCount(b *testing.B) {
	for _, layout := range []string{layered, uniqueRack, random} {
		for k := 1; k <= 4; k++ {
			in := benchInput(layout)
			in.NumStandbyReplicas = k
			b.Run(fmt.Sprintf("%s/standbys=%d", layout, k), func(b *testing.B) {
				b.ReportAllocs()
				cpu0 := cpuTime()
				for b.Loop() {
					if _, err := Assign(in); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}

// BenchmarkAssignSmallGroups plans 300 scenarios of the property tests'
// generator (up to 30 clients and 60 tasks, previous roles and lags, 0 to
// 4 standbys) per op: groups small enough for the chain and whole-set
// searches that even standby load, which the 1,000-client benchmarks skip.
func BenchmarkAssignSmallGroups(b *testing.B) {
	r := rand.New(rand.NewSource(20261202))
	ins := make([]Input, 300)
	for i := range ins {
		ins[i] = randomInput(r, 30, 60)
	}
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		for _, in := range ins {
			if _, err := Assign(in); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
}
