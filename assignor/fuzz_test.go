package assignor

import (
	"errors"
	"math/rand"
	"testing"
)

// FuzzAssign decodes arbitrary bytes as a scenario (either shape) and plans
// it: decoding and planning never panic, a rejected scenario is a
// *FieldError, and an accepted one gives a plan that keeps every invariant,
// the same plan twice, and on small scenarios the optimal spread per task.
func FuzzAssign(f *testing.F) {
	seeds := []string{
		`{"num_standby_replicas": 2, "rack_aware_assignment_tags": ["zone","cluster"], "tasks": 12, "acceptable_recovery_lag": 10000, "max_warmup_replicas": 2, "clients": [{"id": "n1", "tags": {"zone": "eu-central-1a", "cluster": "k8s-cluster1"}, "capacity": 1, "previous_active": [0], "previous_standby": [3], "previous_warmup": [], "lags": {"0": 0, "3": 120}}, {"id": "n2", "tags": {"zone": "eu-central-1b", "cluster": "k8s-cluster2"}}, {"id": "n3", "tags": {"zone": "eu-central-1c", "cluster": "k8s-cluster1"}, "capacity": 2}]}`,
		`{"num_standby_replicas": 2, "rack_aware_assignment_tags": ["zone","cluster"], "tasks": 1, "clients": [{"id":"a","tags":{"zone":"z1","cluster":"c1"},"previous_active":[0]},{"id":"b","tags":{"zone":"z2","cluster":"c2"}},{"id":"c","tags":{"zone":"z2","cluster":"c3"}},{"id":"d","tags":{"zone":"z3","cluster":"c2"}}]}`,
		`{"tasks": 4, "clients": [{"id": "x", "tags": {}, "previous_active": [0,1,2,3], "lags": {"0": 0, "1": 0}}, {"id": "y", "tags": {}, "lags": {"2": 50000}}]}`,
		`{"generation": 7, "self": "n1", "clients": [{"id": "n1", "endpoint": "127.0.0.1:8080", "tags": {"zone": "a"}, "active": [0], "standby": [1], "warmup": []}, {"id": "n2", "endpoint": "127.0.0.1:8081", "tags": {"zone": "b"}, "active": [1], "standby": [0], "warmup": []}], "tasks": [{"task": 0, "active": "n1", "standby": ["n2"], "warmup": []}, {"task": 1, "active": "n2", "standby": ["n1"], "warmup": []}], "quality": {"dimensions": [{"tag": "zone", "values": 2, "tasks_repeating": 0}]}, "status": {"lags": [{"task": 0, "client": "n2", "role": "standby", "lag": 3}]}}`,
		`{"tasks": -1, "clients": []}`,
		`{"tasks": 2, "num_standby_replicas": 1000000000, "clients": [{"id": "a", "tags": {}}, {"id": "b", "tags": {}}]}`,
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		in, err := DecodeInput(data)
		if err != nil {
			return
		}
		// Keep each run small; size is the benchmark's business.
		if in.Tasks > 200 || len(in.Clients) > 40 || len(in.RackAwareAssignmentTags) > 6 {
			return
		}
		p, err := Assign(in)
		if err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("Assign error is not a *FieldError: %v", err)
			}
			return
		}
		checkInvariants(t, in, p)
		if a, b := planJSON(t, p), planJSON(t, mustAssign(t, in)); a != b {
			t.Fatalf("two runs differ:\n%s\n%s", a, b)
		}
		if len(in.Clients) <= 7 && in.NumStandbyReplicas <= 3 {
			for _, tp := range p.Tasks {
				sp, err := Spread(in, tp)
				if err != nil {
					t.Fatal(err)
				}
				if best := bruteBestSpread(in, tp.Active); CompareSpread(sp, best) != 0 {
					t.Fatalf("task %d: spread %v, brute force finds %v", tp.Task, sp, best)
				}
			}
		}
	})
}

// FuzzAssignGenerated plans the random scenario a fuzzed seed generates (the
// generator of the property tests): invariants, determinism whatever the
// input order, no chain of active moves left undone, and the optimal spread
// by brute force.
func FuzzAssignGenerated(f *testing.F) {
	for _, seed := range []int64{1, 708, 20260708} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, seed int64) {
		r := rand.New(rand.NewSource(seed))
		in := randomInput(r, 8, 16)
		p := mustAssign(t, in)
		if a, b := planJSON(t, p), planJSON(t, mustAssign(t, shuffled(r, in))); a != b {
			t.Fatalf("plan depends on input order:\n%s\n%s", a, b)
		}
		if ch := chainLeft(in, p); ch != "" {
			t.Fatalf("chain of active moves left undone: %s (%s)", ch, describe(p))
		}
		for _, tp := range p.Tasks {
			sp, err := Spread(in, tp)
			if err != nil {
				t.Fatal(err)
			}
			if best := bruteBestSpread(in, tp.Active); CompareSpread(sp, best) != 0 {
				t.Fatalf("task %d: spread %v, brute force finds %v (%s)", tp.Task, sp, best, describe(p))
			}
		}
	})
}
