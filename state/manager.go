package state

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/syndtr/goleveldb/leveldb"
	lerrors "github.com/syndtr/goleveldb/leveldb/errors"
	"github.com/syndtr/goleveldb/leveldb/filter"
	"github.com/syndtr/goleveldb/leveldb/opt"
	"github.com/syndtr/goleveldb/leveldb/storage"
)

// Manager owns one application's state directory: its lock, its tasks'
// stores, and the consumer that restores and tails changelogs. It is safe
// for concurrent use.
type Manager struct {
	opts Options
	root string // Dir/ApplicationID
	lock *dirLock
	log  *slog.Logger
	met  *storeCollector
	rep  *replicator
	pid  string
	// progressEvery is how often a running restore logs its progress.
	progressEvery time.Duration

	mu     sync.Mutex
	tasks  map[int32]*Task
	closed bool
	// expected is the number of stores expected open at once, for the
	// memory budget's split (memory.go). Guarded by mu.
	expected int
	// unresolved are, per task, the stores of closed tasks that had
	// changelog records in flight when they closed; WaitProduced says
	// why. Guarded by mu.
	unresolved map[int32][]*DB

	stopCleanup chan struct{}
	cleanupDone chan struct{}
}

// Open locks and opens the state directory Dir/ApplicationID, creating it
// if needed. It fails with a *LockedError when another process or another
// Manager of this process holds it.
func Open(opts Options) (*Manager, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	if err := checkName("application id", opts.ApplicationID); err != nil {
		return nil, err
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	root := filepath.Join(opts.Dir, opts.ApplicationID)
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("state: create state directory: %w", err)
	}
	lock, err := lockDir(root)
	if err != nil {
		return nil, err
	}
	m := &Manager{
		opts:  opts,
		root:  root,
		lock:  lock,
		log:   opts.Logger.With("app", opts.ApplicationID),
		met:   newMetrics(opts.Registerer),
		tasks: make(map[int32]*Task),

		unresolved: make(map[int32][]*DB),

		progressEvery: progressEvery,
	}
	if m.pid, err = loadProcessID(root); err != nil {
		lock.unlock()
		return nil, err
	}
	m.rep = newReplicator(m)
	m.met.add(m)
	if opts.CleanupInterval > 0 {
		m.stopCleanup, m.cleanupDone = make(chan struct{}), make(chan struct{})
		go m.cleanupLoop(opts.CleanupInterval)
	}
	return m, nil
}

// cleanupLoop calls CleanupUnassigned every interval until Close.
func (m *Manager) cleanupLoop(every time.Duration) {
	defer close(m.cleanupDone)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-m.stopCleanup:
			return
		case now := <-t.C:
			if _, err := m.CleanupUnassigned(now); err != nil {
				m.log.Warn("state: cleanup of unassigned tasks", "err", err)
			}
		}
	}
}

// Dir returns the application's state directory, Dir/ApplicationID.
func (m *Manager) Dir() string { return m.root }

// ProcessID returns the instance's stable process id. It is random on the
// first Open of a state directory, then read back from its process.id
// file, so that a restarted instance is recognised as the same client.
func (m *Manager) ProcessID() string { return m.pid }

// OpenTask opens the stores of task id under
// Dir/ApplicationID/<id>/<store>, creating them if needed. A corrupted
// store is moved aside and reopened empty, for Restore to rebuild. The task
// starts idle: Restore it, or StartStandby. A task can be open once at a
// time.
func (m *Manager) OpenTask(id int32, stores []StoreSpec) (*Task, error) {
	if id < 0 {
		return nil, fmt.Errorf("state: open task %d: negative task id", id)
	}
	if len(stores) == 0 {
		return nil, fmt.Errorf("state: open task %d: no stores", id)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, errors.New("state: manager closed")
	}
	if _, ok := m.tasks[id]; ok {
		return nil, fmt.Errorf("state: open task %d: already open", id)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t := &Task{
		m:      m,
		id:     id,
		dir:    filepath.Join(m.root, strconv.Itoa(int(id))),
		byName: make(map[string]*DB, len(stores)),
		ctx:    ctx,
		cancel: cancel,
	}
	for _, spec := range stores {
		if err := checkName("store name", spec.Name); err != nil {
			cancel()
			return nil, err
		}
		if _, dup := t.byName[spec.Name]; dup {
			cancel()
			return nil, fmt.Errorf("state: open task %d: store %q declared twice", id, spec.Name)
		}
		s, err := m.openStore(t, spec, m.openStores()+len(t.stores))
		if err != nil {
			for _, s := range t.stores {
				s.close()
			}
			cancel()
			return nil, err
		}
		t.stores = append(t.stores, s)
		t.byName[s.name] = s
	}
	m.tasks[id] = t
	return t, nil
}

// Task returns the open task id, or nil.
func (m *Manager) Task(id int32) *Task {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.tasks[id]
}

// Err returns the error of an unhealthy open task, the lowest task id
// first, or nil when all are healthy. An instance with an error is not
// ready.
func (m *Manager) Err() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	var worst *Task
	for _, t := range m.tasks {
		if t.Err() != nil && (worst == nil || t.id < worst.id) {
			worst = t
		}
	}
	if worst == nil {
		return nil
	}
	return worst.Err()
}

// Checkpoints returns the checkpoint of every store this instance holds:
// the live value of open stores, and for the rest what ScanCheckpoints
// reads from disk. The group leader turns these into lags.
func (m *Manager) Checkpoints() (map[int32]map[string]int64, error) {
	out, err := ScanCheckpoints(m.opts.Dir, m.opts.ApplicationID)
	m.mu.Lock()
	defer m.mu.Unlock()
	for id, t := range m.tasks {
		out[id] = t.Checkpoints()
	}
	return out, err
}

// Close closes every open task and the restore consumer, and releases the
// directory lock.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	tasks := make([]*Task, 0, len(m.tasks))
	for _, t := range m.tasks {
		tasks = append(tasks, t)
	}
	m.mu.Unlock()
	var errs []error
	for _, t := range tasks {
		errs = append(errs, t.Close())
	}
	if m.stopCleanup != nil {
		close(m.stopCleanup)
		<-m.cleanupDone
	}
	m.rep.close()
	m.met.remove(m)
	errs = append(errs, m.lock.unlock())
	return errors.Join(errs...)
}

func (m *Manager) taskClosed(t *Task) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.tasks[t.id] == t {
		delete(m.tasks, t.id)
	}
	// Forget the closed stores of every task whose records are all
	// resolved by now. A task that never reopens here would otherwise keep
	// its closed stores referenced for the Manager's life.
	for id := range m.unresolved {
		m.pruneResolved(id)
	}
	for _, s := range t.stores {
		if s.unacknowledged() > 0 {
			m.unresolved[t.id] = append(m.unresolved[t.id], s)
		}
	}
}

// WaitProduced waits until the changelog records that closed incarnations
// of task id had in flight are resolved, acknowledged or failed, or ctx
// ends. Open, restore and activate a task that closed on this instance
// only after it.
//
// Those records were produced with the closed task's context, which Close
// cancels. When franz-go drains a partition, as when a broker comes back
// after an outage, it fails every record buffered for it with the error of
// the first one's context. A new incarnation's records queued behind them
// would fail with "context canceled". And if the old records are produced
// after all, the new incarnation's restore would miss what they write.
func (m *Manager) WaitProduced(ctx context.Context, id int32) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for logged := false; ; {
		left := m.unresolvedRecords(id)
		if left == 0 {
			return nil
		}
		if !logged {
			m.log.Info("state: waiting for the changelog records of the task's closed incarnation to be resolved before opening it again", "task", id, "records", left)
			logged = true
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("state: task %d: %d changelog records of its closed incarnation still in flight: %w", id, left, ctx.Err())
		case <-tick.C:
		}
	}
}

// unresolvedRecords returns how many changelog records the closed
// incarnations of task id still have in flight, forgetting the stores that
// have none left.
func (m *Manager) unresolvedRecords(id int32) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.pruneResolved(id)
}

// pruneResolved forgets the closed stores of task id with no records in
// flight, and returns how many the others have. The caller holds m.mu.
func (m *Manager) pruneResolved(id int32) int64 {
	var left int64
	kept := m.unresolved[id][:0]
	for _, s := range m.unresolved[id] {
		if n := s.unacknowledged(); n > 0 {
			left += n
			kept = append(kept, s)
		}
	}
	if len(kept) == 0 {
		delete(m.unresolved, id)
	} else {
		m.unresolved[id] = kept
	}
	return left
}

// openStore opens one store's database, moving a corrupted one aside.
// open is the number of stores open beside it, for the memory budget.
func (m *Manager) openStore(t *Task, spec StoreSpec, open int) (*DB, error) {
	s := &DB{
		task:      t,
		name:      spec.Name,
		changelog: spec.Changelog,
		partition: t.id,
		path:      filepath.Join(t.dir, spec.Name),
		ldb:       m.budgetedLevelDB(m.opts.LevelDB, open),
	}
	if s.changelog == "" {
		s.changelog = ChangelogTopic(m.opts.ApplicationID, spec.Name)
	}
	if spec.LevelDB != nil {
		if err := spec.LevelDB.check("StoreSpec " + spec.Name + ": LevelDB"); err != nil {
			return nil, err
		}
		s.ldb = *spec.LevelDB
	}
	s.stats.opened = time.Now()
	s.view.s = s
	s.promise = s.onProduced
	s.end.Store(-1)
	s.maxAcked.Store(-1)
	s.rep.init(s)

	var err error
	if d := readDamageMarker(s.path); d != nil {
		err = d
	} else {
		err = s.open(m.opts.WrapStorage)
	}
	var d *damageError
	if errors.As(err, &d) {
		err = m.rebuild(s, d)
	}
	if err != nil {
		return nil, fmt.Errorf("state: open store %s of task %d at %s: %w", s.name, t.id, s.path, err)
	}
	return s, nil
}

// rebuild moves a damaged store's directory aside, to
// <store>.corrupt-<unix-nanos>, deleted CleanupDelay later. It opens an
// empty store in its place, with checkpoint 0: Restore rebuilds it from
// the changelog's start.
func (m *Manager) rebuild(s *DB, d *damageError) error {
	aside := fmt.Sprintf("%s.corrupt-%d", s.path, time.Now().UnixNano())
	if err := os.Rename(s.path, aside); err != nil {
		return fmt.Errorf("store is damaged (%v) and could not be moved aside: %w", d, err)
	}
	s.stats.rebuild(d.Reason)
	m.log.Error("state: DAMAGED STORE moved aside; rebuilding it from the changelog from the start",
		"task", s.partition, "store", s.name, "file", d.File, "reason", d.Reason, "path", s.path,
		"moved_to", aside, "changelog", s.changelog, "err", d.Detail)
	return s.open(m.opts.WrapStorage)
}

func (s *DB) open(wrap func(string, storage.Storage) storage.Storage) error {
	if err := os.MkdirAll(s.path, 0o755); err != nil {
		return err
	}
	stor, err := storage.OpenFile(s.path, false)
	if err != nil {
		return err
	}
	if wrap != nil {
		stor = wrap(s.path, stor)
	}
	o := &opt.Options{
		BlockCacheCapacity: s.ldb.blockCacheCapacity(),
		WriteBuffer:        s.ldb.WriteBufferBytes,
		// Restore writes large batches: let L0 grow before slowing writes.
		CompactionTableSize:    4 << 20,
		WriteL0SlowdownTrigger: 16,
		WriteL0PauseTrigger:    24,
	}
	if s.ldb.BloomBits > 0 {
		o.Filter = filter.NewBloomFilter(s.ldb.BloomBits)
	}
	if s.ldb.Compression == CompressionNone {
		o.Compression = opt.NoCompression
	}
	db, torn, err := openDB(stor, o)
	if err != nil {
		stor.Close()
		return err
	}
	ck, err := readCheckpoint(db)
	if err != nil {
		db.Close()
		stor.Close()
		if fd, ok := corruptedFile(err); ok {
			d := newDamage(err)
			if fd.Zero() {
				d.Reason = reasonCheckpoint
			}
			return d
		}
		return err
	}
	if torn != nil {
		s.task.m.reportTornTail(s, torn, ck)
	}
	s.dbMu.Lock()
	s.db, s.stor = db, stor
	s.dbMu.Unlock()
	s.checkpoint.Store(ck)
	s.damaged.Store(false)
	return nil
}

// reportTornTail reports a journal tail torn by a crash that s's open dropped.
func (m *Manager) reportTornTail(s *DB, scan *journalScan, ck int64) {
	s.stats.tornTails.Add(1)
	m.log.Warn("state: dropped a journal tail torn by a crash mid-write (nothing intact after it): the store resumes from its last complete batch, and restore applies the rest from the changelog; not damage, no rebuild",
		"task", s.partition, "store", s.name, "file", scan.file, "torn", scan.reason, "checkpoint", ck)
}

func readCheckpoint(db *leveldb.DB) (int64, error) {
	v, err := db.Get(checkpointKey, nil)
	if errors.Is(err, leveldb.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	ck, ok := decodeOffset(v)
	if !ok || ck < 0 {
		return 0, lerrors.NewErrCorrupted(storage.FileDesc{}, fmt.Errorf("checkpoint value %x is not an offset", v))
	}
	return ck, nil
}

func (s *DB) close() error {
	s.dbMu.Lock()
	defer s.dbMu.Unlock()
	if s.db == nil {
		return nil
	}
	err := s.db.Close()
	if cerr := s.stor.Close(); err == nil {
		err = cerr
	}
	s.db = nil
	return err
}

func (s *DB) labels() []string {
	return []string{strconv.Itoa(int(s.partition)), s.name}
}

// checkName rejects names that are not one path element.
func checkName(what, name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, `/\`+"\x00") {
		return fmt.Errorf("state: %s %q must be a non-empty single path element", what, name)
	}
	return nil
}

// loadProcessID reads root/process.id, creating it on first use.
func loadProcessID(root string) (string, error) {
	path := filepath.Join(root, "process.id")
	if b, err := os.ReadFile(path); err == nil {
		if id := strings.TrimSpace(string(b)); id != "" {
			return id, nil
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("state: read process id: %w", err)
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40 // UUID v4
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	id := h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
	if err := writeFileAtomic(path, []byte(id+"\n")); err != nil {
		return "", fmt.Errorf("state: write process id: %w", err)
	}
	return id, nil
}

// writeFileAtomic replaces path with b through a uniquely named temporary
// file, so that concurrent writers never expose a partial file.
func writeFileAtomic(path string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// EnsureChangelogs creates the missing changelog topics of specs with
// partitions partitions, cleanup.policy=compact and replicationFactor; -1
// is the broker's default. min.insync.replicas is one less than the
// replication factor where that is at least 1. It validates the existing
// topics, and returns every mismatch as a *ChangelogError, joined. With
// Options.ChangelogLeadersWith set, a topic it creates has its leaders
// aligned with that topic's; an existing topic is never changed.
func (m *Manager) EnsureChangelogs(ctx context.Context, partitions int32, replicationFactor int16, specs []StoreSpec) error {
	if err := m.rep.start(); err != nil {
		return err
	}
	topics := changelogTopics(m.opts.ApplicationID, specs)
	configs := make(map[string]map[string]string)
	for i, s := range specs {
		if len(s.ChangelogConfigs) > 0 {
			configs[topics[i]] = s.ChangelogConfigs
		}
	}
	var align *leaderAlignment
	if m.opts.ChangelogLeadersWith != "" {
		align = &leaderAlignment{cl: m.rep.cl, input: m.opts.ChangelogLeadersWith, log: m.log}
	}
	return ensureChangelogTopics(ctx, m.rep.adm, align, partitions, replicationFactor, configs, topics)
}
