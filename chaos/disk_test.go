package chaos

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rackstream/rackstream/harness/cluster"
)

// TestStateLost is scenario 5: an instance's state directory deleted while
// it is down (a lost volume), then another instance's store files (their
// manifests) damaged while it is down. The first comes back as a new
// member (its process id was in that directory) and rebuilds its replicas
// from the changelogs; the second must notice the damage when it opens a
// store, move the store aside and rebuild it from its changelog, never
// serve a silently shortened store. Meanwhile the standbys that took over
// their tasks serve them.
func TestStateLost(t *testing.T) {
	needMode(t, false)
	stateLost(t, setup{})
}

// TestStateLostExactlyOnce is scenario 5 under exactly_once_v2: both kills
// land mid-transaction, and the stores rebuilt from the changelogs (read
// committed) must hold exact counts, the output, read committed, each
// count once and in order. Long form only.
func TestStateLostExactlyOnce(t *testing.T) {
	needMode(t, true)
	stateLost(t, setup{eos: true})
}

func stateLost(t *testing.T, s setup) {
	r := beginWith(t, "disk", s)

	lost := r.ins[2]
	oldID := lost.ID()
	r.kill(lost)
	r.waitTakeover(lost)
	if err := os.RemoveAll(lost.StateDir); err != nil {
		t.Fatal(err)
	}
	r.settle()
	back := time.Now()
	r.restart(lost)
	r.healed(back)
	if lost.ID() == oldID {
		t.Errorf("%s kept its process id %s without its state directory", lost.Name, oldID)
	}

	r.settle()
	damaged := r.ins[1]
	r.kill(damaged)
	r.waitTakeover(damaged)
	stores := damageManifests(t, damaged.StateDir)
	t.Logf("damaged the manifests of %d stores of %s", len(stores), damaged.Name)
	r.settle()
	back = time.Now()
	r.restart(damaged)
	r.healed(back)
	// The stores it opened again (those of the tasks it holds now) were
	// found damaged and moved aside.
	aside := 0
	for _, dir := range stores {
		m, _ := filepath.Glob(dir + ".corrupt-*")
		aside += len(m)
	}
	if aside == 0 {
		t.Errorf("%s reopened none of its %d damaged stores as damaged (no <store>.corrupt-* beside them):\n%s",
			damaged.Name, len(stores), cluster.Tail(damaged.Proc().Err.String(), 20))
	}
	t.Logf("%d of %d damaged stores moved aside and rebuilt", aside, len(stores))
	r.settle()
	r.end(r.activeBound())
}

// damageManifests overwrites 16 bytes in the middle of every store's
// LevelDB MANIFEST under dir with garbage, and returns the store
// directories damaged. (A journal damaged within its last 32 KiB block
// looks like a torn tail, which goleveldb's reader cannot tell apart from
// a crash mid-write: the store then resumes from its last complete batch,
// correctly, and restores the rest; a damaged manifest is damage.)
func damageManifests(t *testing.T, dir string) []string {
	t.Helper()
	var stores []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasPrefix(d.Name(), "MANIFEST-") {
			return nil
		}
		fi, err := d.Info()
		if err != nil || fi.Size() < 32 {
			return nil
		}
		f, err := os.OpenFile(p, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		garbage := make([]byte, 16)
		for i := range garbage {
			garbage[i] = byte(0xA5 ^ i)
		}
		if _, err := f.WriteAt(garbage, fi.Size()/2-8); err != nil {
			t.Fatal(err)
		}
		stores = append(stores, filepath.Dir(p))
		return nil
	})
	if len(stores) == 0 {
		t.Fatalf("no store manifest under %s to damage", dir)
	}
	return stores
}
