package main

import (
	"strings"
	"testing"

	"github.com/rackstream/rackstream/assignor/balancer"
	"github.com/rackstream/rackstream/tags"
)

func TestDevPlacementNamesEveryMember(t *testing.T) {
	const (
		pid1     = "704b5293-1c8e-4f7a-9a43-2d0c51e0a001"
		pid2     = "9f1c0d2e-5b6a-47c8-8e0f-3a2b1c0d9e02"
		external = "c0ffee00-5b6a-47c8-8e0f-3a2b1c0d9e03"
	)
	var out strings.Builder
	d := &devCluster{out: &lockedWriter{w: &out}}
	d.insts = []*devInstance{
		{d: d, name: "i1", addr: "127.0.0.1:8080", pid: pid1},
		{d: d, name: "i2", addr: "127.0.0.1:8081", pid: pid2},
	}
	zone := func(z string) tags.Set {
		s, err := tags.NewSet(tags.Tag{Key: devZoneTag, Value: z}, tags.Tag{Key: devClusterT, Value: "k8s-cluster1"})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	p := &balancer.Placement{Generation: 4,
		Members: []balancer.Member{
			{ProcessID: pid1, Endpoint: "127.0.0.1:8080", Tags: zone("eu-central-1a")},
			{ProcessID: pid2, Endpoint: "127.0.0.1:8081", Tags: zone("eu-central-1b")},
			{ProcessID: external, Endpoint: "127.0.0.1:18080", Tags: zone("eu-central-1c")},
		},
		Tasks: []balancer.Replicas{{Active: 0, Standbys: []int{2}}, {Active: 2, Standbys: []int{1}}},
	}
	d.printPlacement(p)
	got := out.String()
	for _, want := range []string{
		"0     i1 (eu-central-1a, k8s-cluster1)               127.0.0.1:18080 (eu-central-1c, k8s-cluster1)",
		"1     127.0.0.1:18080 (eu-central-1c, k8s-cluster1)  i2 (eu-central-1b, k8s-cluster1)",
		pid1, pid2, // the status table gives the process ids
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the placement lacks %q:\n%s", want, got)
		}
	}
	if table, _, _ := strings.Cut(got, "generation"); strings.Contains(table, external) {
		t.Errorf("the member run elsewhere is shown by its process id, not its endpoint:\n%s", got)
	}
}
