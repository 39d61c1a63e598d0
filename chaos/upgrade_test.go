package chaos

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/rackstream/rackstream/harness/cluster"
)

// TestRollingUpgrade is scenario 7: the group starts on an earlier build,
// the last commit whose join-metadata (wire) version was lower than
// today's, and is upgraded one instance at a time to this tree's build
// under load, the group mixed meanwhile: the leader, old or new, must read
// every member's metadata and place every task.
//
// It has no exactly-once variant, unlike scenarios 1 to 6, and cannot
// have one: the earlier build predates exactly-once, its `run` refuses
// processing.guarantee=exactly_once_v2 ("not supported by this build's
// runtime yet", service at 3cab1d7, the parent of afa5f1e,
// which set today's wire version).
func TestRollingUpgrade(t *testing.T) {
	needMode(t, true)
	rev := lowerWireRevision(t)
	old, err := cluster.BuildRevision(t.TempDir(), rev)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("upgrading from %s", rev)
	r := beginWith(t, "rolling-upgrade", setup{bin: old})
	var back time.Time
	for _, in := range r.ins {
		if code := in.Stop(time.Minute); code != 0 {
			t.Errorf("%s (old build) exited %d after SIGTERM", in.Name, code)
		}
		in.Bin = "" // this tree's build from now on
		back = time.Now()
		in.StartReady(deadline)
		r.settle() // the group mixed, under load
	}
	r.healed(back)
	md, _, err := r.g.Metadata()
	if err != nil {
		t.Fatal(err)
	}
	builds := map[string]int{}
	for _, c := range md.Clients {
		builds[c.Build]++
	}
	if len(builds) != 1 {
		t.Errorf("after the upgrade the members report builds %v, want one", builds)
	}
	r.settle()
	r.end(r.activeBound())
}

// lowerWireRevision returns the parent of the commit that set the current
// wire version (assignor/balancer's LatestVersion): the last commit whose
// join metadata had a lower version.
func lowerWireRevision(t *testing.T) string {
	t.Helper()
	root, err := cluster.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("git", "-C", root, "log", "-n1", "--format=%H", "-G", `LatestVersion *= *Version`, "--", "assignor/balancer/wire.go").Output()
	bump := strings.TrimSpace(string(out))
	if err != nil || bump == "" {
		t.Fatalf("finding the commit that set the wire version (git log): %q %v", bump, err)
	}
	return bump + "^"
}
