package assignor

import (
	"fmt"
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

// benchClients returns n clients over 3 zones x 4 clusters x 10 racks (120
// tag classes), or with unique=true a rack per client (n classes: the
// search's worst case).
func benchClients(n int, unique bool) []Client {
	cs := make([]Client, n)
	for i := range cs {
		rack := fmt.Sprintf("r%d", (i/12)%10)
		if unique {
			rack = fmt.Sprintf("r%d", i)
		}
		cs[i] = Client{ID: fmt.Sprintf("n%04d", i), Capacity: 1, Tags: map[string]string{
			"zone": fmt.Sprintf("eu-central-1%c", 'a'+i%3), "cluster": fmt.Sprintf("k%d", (i/3)%4), "rack": rack}}
	}
	return cs
}

func benchInput(unique bool) Input {
	return Input{NumStandbyReplicas: 2, RackAwareAssignmentTags: []string{"zone", "cluster", "rack"}, Tasks: 10000,
		AcceptableRecoveryLag: DefaultAcceptableRecoveryLag, MaxWarmupReplicas: DefaultMaxWarmupReplicas,
		Clients: benchClients(1000, unique)}
}

// BenchmarkAssign1000x10000 plans 1,000 clients x 10,000 tasks x 2 standbys
// x 3 tag dimensions: from scratch; the steady state (the previous plan fed
// back with every replica caught up: a rebalance that changes nothing); and
// after losing one of the three zones (the survivors' previous roles and
// lags as input).
func BenchmarkAssign1000x10000(b *testing.B) {
	for _, unique := range []bool{false, true} {
		name := "120classes"
		if unique {
			name = "1000classes"
		}
		fresh := benchInput(unique)
		p, err := Assign(fresh)
		if err != nil {
			b.Fatal(err)
		}
		steady := feedBack(fresh, p)
		lost := steady
		lost.Clients = nil
		for _, c := range steady.Clients {
			if c.Tags["zone"] != "eu-central-1b" {
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
	for _, unique := range []bool{false, true} {
		for k := 1; k <= 4; k++ {
			in := benchInput(unique)
			in.NumStandbyReplicas = k
			name := fmt.Sprintf("120classes/standbys=%d", k)
			if unique {
				name = fmt.Sprintf("1000classes/standbys=%d", k)
			}
			b.Run(name, func(b *testing.B) {
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
