package state

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/syndtr/goleveldb/leveldb/opt"
	"github.com/syndtr/goleveldb/leveldb/storage"
)

// sidecarName is a small file in each store's directory holding a recent
// checkpoint in decimal. It is advisory: it lets ScanCheckpoints read
// checkpoints without opening databases, and it is never ahead of the
// database by more than what LevelDB may lose on power loss.
const sidecarName = "RACKSTREAM-CHECKPOINT"

// sidecarEvery throttles sidecar writes of an active or standby task.
const sidecarEvery = 5 * time.Second

// ScanCheckpoints returns the checkpoint of every store found on disk under
// dir/appID, by task id and store name, without locking the directory. It
// reads each store's checkpoint sidecar file. It opens a database,
// read-only, only when the sidecar is missing, and skips the stores some
// process has open. A missing application directory yields an empty map.
func ScanCheckpoints(dir, appID string) (map[int32]map[string]int64, error) {
	root := filepath.Join(dir, appID)
	out := make(map[int32]map[string]int64)
	tasks, err := taskDirs(root)
	if err != nil {
		return out, err
	}
	var errs []error
	for _, id := range tasks {
		tdir := filepath.Join(root, strconv.Itoa(int(id)))
		ents, err := os.ReadDir(tdir)
		if err != nil {
			errs = append(errs, fmt.Errorf("state: scan task %d: %w", id, err))
			continue
		}
		for _, e := range ents {
			if !e.IsDir() || strings.Contains(e.Name(), ".corrupt-") {
				continue
			}
			ck, ok := readStoreCheckpoint(filepath.Join(tdir, e.Name()))
			if !ok {
				continue
			}
			if out[id] == nil {
				out[id] = make(map[string]int64)
			}
			out[id][e.Name()] = ck
		}
	}
	return out, errors.Join(errs...)
}

func readStoreCheckpoint(path string) (int64, bool) {
	if readDamageMarker(path) != nil {
		return 0, false // to be rebuilt: it holds nothing to count on
	}
	if b, err := os.ReadFile(filepath.Join(path, sidecarName)); err == nil {
		if ck, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && ck >= 0 {
			return ck, true
		}
	}
	stor, err := storage.OpenFile(path, true)
	if err != nil {
		return 0, false
	}
	defer stor.Close()
	db, _, err := openDB(stor, &opt.Options{ReadOnly: true, ErrorIfMissing: true})
	if err != nil {
		return 0, false
	}
	defer db.Close()
	ck, err := readCheckpoint(db)
	return ck, err == nil
}

// taskDirs lists the numeric task directories under root, ascending.
func taskDirs(root string) ([]int32, error) {
	ents, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("state: scan %s: %w", root, err)
	}
	var ids []int32
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		id, err := strconv.ParseInt(e.Name(), 10, 32)
		if err != nil || id < 0 || strconv.FormatInt(id, 10) != e.Name() {
			continue
		}
		ids = append(ids, int32(id))
	}
	slices.Sort(ids)
	return ids, nil
}

func writeSidecar(s *DB) error {
	return writeFileAtomic(filepath.Join(s.path, sidecarName), []byte(strconv.FormatInt(s.Checkpoint(), 10)+"\n"))
}

// writeSidecars writes the sidecar of each of t's open stores now. A
// restore that ends as its task closes writes them beside Close, so each
// is written under its store's dbMu, read-locked, and skipped once closed.
func (m *Manager) writeSidecars(t *Task) {
	for _, s := range t.stores {
		s.dbMu.RLock()
		var err error
		if s.db != nil {
			err = writeSidecar(s)
		}
		s.dbMu.RUnlock()
		if err != nil {
			m.log.Warn("state: write checkpoint sidecar", "task", t.id, "store", s.name, "err", err)
		}
	}
	t.sidecarAt.Store(time.Now().UnixNano())
}

// maybeWriteSidecars writes t's sidecars if the last write is older than
// sidecarEvery.
func (m *Manager) maybeWriteSidecars(t *Task) {
	if time.Now().UnixNano()-t.sidecarAt.Load() >= int64(sidecarEvery) {
		m.writeSidecars(t)
	}
}

// CleanupUnassigned deletes the directories of tasks that are not open and
// were last used at least CleanupDelay before now. A task was last used
// when its last checkpoint sidecar was written, else at its directory's
// modification time. Corrupted stores moved aside that long ago go too. It
// returns the deleted task ids. The Manager calls it every
// Options.CleanupInterval; now is a parameter so that tests need no clock.
func (m *Manager) CleanupUnassigned(now time.Time) ([]int32, error) {
	ids, err := taskDirs(m.root)
	if err != nil {
		return nil, err
	}
	var removed []int32
	var errs []error
	for _, id := range ids {
		m.mu.Lock()
		_, open := m.tasks[id]
		if open {
			m.mu.Unlock()
			m.cleanupAside(filepath.Join(m.root, strconv.Itoa(int(id))), now)
			continue
		}
		tdir := filepath.Join(m.root, strconv.Itoa(int(id)))
		last := lastUsed(tdir)
		if now.Sub(last) < m.opts.CleanupDelay {
			m.mu.Unlock()
			continue
		}
		// Hold m.mu so that OpenTask cannot open the task while it goes.
		err := os.RemoveAll(tdir)
		m.mu.Unlock()
		if err != nil {
			errs = append(errs, fmt.Errorf("state: delete unassigned task %d: %w", id, err))
			continue
		}
		m.log.Info("state: deleted stores of unassigned task", "task", id, "dir", tdir, "last_used", last, "cleanup_delay", m.opts.CleanupDelay)
		removed = append(removed, id)
	}
	return removed, errors.Join(errs...)
}

// cleanupAside deletes stores moved aside as corrupted more than
// CleanupDelay before now.
func (m *Manager) cleanupAside(tdir string, now time.Time) {
	ents, _ := os.ReadDir(tdir)
	for _, e := range ents {
		i := strings.Index(e.Name(), ".corrupt-")
		if i < 0 {
			continue
		}
		ns, err := strconv.ParseInt(e.Name()[i+len(".corrupt-"):], 10, 64)
		if err != nil || now.Sub(time.Unix(0, ns)) < m.opts.CleanupDelay {
			continue
		}
		if err := os.RemoveAll(filepath.Join(tdir, e.Name())); err == nil {
			m.log.Info("state: deleted corrupted store moved aside", "path", filepath.Join(tdir, e.Name()))
		}
	}
}

// lastUsed is the newest modification time among a task directory, its
// store directories and their sidecars.
func lastUsed(tdir string) time.Time {
	var last time.Time
	consider := func(p string) {
		if fi, err := os.Stat(p); err == nil && fi.ModTime().After(last) {
			last = fi.ModTime()
		}
	}
	consider(tdir)
	ents, _ := os.ReadDir(tdir)
	for _, e := range ents {
		if e.IsDir() {
			consider(filepath.Join(tdir, e.Name(), sidecarName))
		}
	}
	return last
}
