package state

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Role is what a task's stores are doing.
type Role int32

const (
	// RoleIdle: opened, neither restoring, tailing nor active.
	RoleIdle Role = iota
	// RoleRestoring: catching up to the end offset captured when Restore
	// or Promote started. Not ready.
	RoleRestoring
	// RoleStandby: tailing the changelogs continuously.
	RoleStandby
	// RoleActive: caught up; writes go through the write buffer and the
	// changelog producer.
	RoleActive
	// RoleClosed: closed.
	RoleClosed
)

func (r Role) String() string {
	switch r {
	case RoleIdle:
		return "idle"
	case RoleRestoring:
		return "restoring"
	case RoleStandby:
		return "standby"
	case RoleActive:
		return "active"
	case RoleClosed:
		return "closed"
	}
	return fmt.Sprintf("Role(%d)", int32(r))
}

// ErrTaskClosed is returned by operations on a closed task.
var ErrTaskClosed = errors.New("state: task closed")

// Task is the local state of one partition slot: its stores, opened
// together. The one goroutine that runs the task calls Restore,
// StartStandby, Promote, Demote, Activate, Commit, Freeze, Abort and Close,
// or another does with the task paused. WaitFrozen and WriteFrozen may run
// on another goroutine beside its writes (commit.go). Role, Ready, Err,
// Lag and Checkpoints may be called from any goroutine.
type Task struct {
	m      *Manager
	id     int32
	dir    string
	stores []*DB
	byName map[string]*DB

	ctx    context.Context // cancelled by Close: ends produces and waits
	cancel context.CancelFunc

	role     atomic.Int32
	producer Producer
	// writeMu keeps WriteFrozen, which runs beside the task's writes,
	// apart from what replaces or drops the stores' buffers: Freeze, Abort,
	// and Demote and Close through dropActive (commit.go).
	writeMu   sync.Mutex
	sidecarAt atomic.Int64 // unix nanos of the last sidecar write

	// err is the task's error, set once: the first sticks. It is an
	// atomic pointer, as every write to a store reads it.
	err atomic.Pointer[error]
}

// ID returns the task's partition slot.
func (t *Task) ID() int32 { return t.id }

// Dir returns the task's directory.
func (t *Task) Dir() string { return t.dir }

// Store returns the named store, nil if the task has none by that name.
func (t *Task) Store(name string) *DB { return t.byName[name] }

// Stores returns the task's stores in the order they were declared.
func (t *Task) Stores() []*DB { return t.stores }

// Role returns what the task is doing.
func (t *Task) Role() Role { return Role(t.role.Load()) }

// Ready reports whether the task is active, caught up and healthy: it may
// process records and answer queries.
func (t *Task) Ready() bool { return t.Role() == RoleActive && t.Err() == nil }

// Err returns the storage or changelog error that made the task unhealthy,
// nil while it is healthy. An unhealthy task keeps its data and
// checkpoints. To recover, close it, reopen it and restore it from the
// changelog.
func (t *Task) Err() error {
	if p := t.err.Load(); p != nil {
		return *p
	}
	return nil
}

// fail records err as the task's error, the first one sticking, and
// counts it.
func (t *Task) fail(s *DB, err error) {
	if t.err.CompareAndSwap(nil, &err) {
		t.m.log.Error("state: task unhealthy", "task", t.id, "store", s.name, "err", err)
	}
	s.stats.errors.Add(1)
}

// storageErr wraps a LevelDB error of store s with context and marks the
// task unhealthy. A corruption also marks the store for a rebuild at its
// next open: a damaged table block met by a read, or by a compaction and
// then returned by every write.
func (t *Task) storageErr(s *DB, op string, err error) error {
	err = fmt.Errorf("state: %s store %s of task %d (%s): %w", op, s.name, t.id, s.path, err)
	if _, ok := corruptedFile(err); ok {
		s.markDamaged(err)
	}
	t.fail(s, err)
	return err
}

// Checkpoints returns each store's checkpoint, the next changelog offset
// to read, by store name.
func (t *Task) Checkpoints() map[string]int64 {
	out := make(map[string]int64, len(t.stores))
	for _, s := range t.stores {
		out[s.name] = s.Checkpoint()
	}
	return out
}

// Lag returns each store's lag behind the last end offset seen for its
// changelog, by store name; -1 when none was seen yet.
func (t *Task) Lag() map[string]int64 {
	out := make(map[string]int64, len(t.stores))
	for _, s := range t.stores {
		out[s.name] = s.Lag()
	}
	return out
}

// Restore catches every store up to the end of its changelog partition,
// as captured when Restore starts: the high watermark. Under
// read_committed it also waits for the transactions open then to end, as
// one may still commit (replicator.endOffsets says why). It returns when
// all stores are caught up, ctx is done, or a store fails. Progress is
// logged and exported as metrics. The task is left idle: Activate it, or
// StartStandby.
func (t *Task) Restore(ctx context.Context) error {
	if err := t.Err(); err != nil {
		return err
	}
	if err := t.setRole(RoleRestoring, RoleIdle); err != nil {
		return err
	}
	err := t.m.rep.catchUp(ctx, t)
	t.m.rep.unsubscribe(t)
	t.role.CompareAndSwap(int32(RoleRestoring), int32(RoleIdle)) // unless closed meanwhile
	return err
}

// Producer is what an active task needs of a Kafka producer. A
// *kgo.Client is one; the processor's unit tests pass a fake. Like a
// *kgo.Client, Produce must call promise exactly once, with the very
// record it was given, not a copy, and not touch the record after. The
// store's promise hands the record back to the arena it came from, to be
// reused (internal/recarena).
type Producer interface {
	Produce(ctx context.Context, r *kgo.Record, promise func(*kgo.Record, error))
}

// optValue is producer's setting of opt when it reports its settings as
// *kgo.Client does, else nil.
func optValue(producer Producer, opt any) any {
	if p, ok := producer.(interface{ OptValue(any) any }); ok {
		return p.OptValue(opt)
	}
	return nil
}

// Activate makes a caught-up idle task active. From now on its stores' Put
// and Delete buffer writes and produce changelog records through producer,
// which the caller owns: under exactly-once, its transactional client. The
// producer must leave Record.Partition as set (ChangelogPartitioner does),
// and must use acks=all, kgo's default.
func (t *Task) Activate(producer Producer) error {
	if producer == nil {
		return errors.New("state: activate: nil producer")
	}
	if err := t.Err(); err != nil {
		return err
	}
	// An acknowledged changelog write must survive losing a broker.
	if acks, ok := optValue(producer, kgo.RequiredAcks).(kgo.Acks); ok && acks != kgo.AllISRAcks() {
		return fmt.Errorf("state: activate task %d: the changelog producer must use acks=all (kgo.RequiredAcks(kgo.AllISRAcks()))", t.id)
	}
	if err := t.setRole(RoleActive, RoleIdle); err != nil {
		return err
	}
	t.producer = producer
	for _, s := range t.stores {
		s.setBuffer(newWriteBuffer())
		s.cut.Store(nil)
		s.maxAcked.Store(s.Checkpoint() - 1)
	}
	t.m.writeSidecars(t)
	return nil
}

// StartStandby starts tailing every store's changelog from its checkpoint
// in the background, through the same apply path as Restore. A store that
// has seen no end offset of its changelog yet learns one from a listing,
// also in the background, so that its lag is known even while no record
// comes. The task must be idle.
func (t *Task) StartStandby() error {
	if err := t.Err(); err != nil {
		return err
	}
	if err := t.setRole(RoleStandby, RoleIdle); err != nil {
		return err
	}
	if err := t.m.rep.subscribe(t, -1); err != nil {
		return err
	}
	t.m.rep.learnEnds(t)
	return nil
}

// Promote turns a standby or idle task active without reopening its
// stores. It captures the changelogs' end offsets, applies the records up
// to them, stops tailing and activates with producer. On error the task is
// left idle; StartStandby resumes tailing.
func (t *Task) Promote(ctx context.Context, producer Producer) error {
	if err := t.Err(); err != nil {
		return err
	}
	switch r := t.Role(); r {
	case RoleStandby:
		if err := t.setRole(RoleRestoring, RoleStandby); err != nil {
			return err
		}
		err := t.m.rep.catchUp(ctx, t)
		t.m.rep.unsubscribe(t)
		t.role.CompareAndSwap(int32(RoleRestoring), int32(RoleIdle)) // unless closed meanwhile
		if err != nil {
			return err
		}
	case RoleIdle:
		if err := t.Restore(ctx); err != nil {
			return err
		}
	default:
		return fmt.Errorf("state: promote task %d: task is %s", t.id, r)
	}
	return t.Activate(producer)
}

// Demote turns an active task into a standby. It drops uncommitted
// writes, so Commit first to keep them. It forgets the producer, and the
// stores start tailing their changelogs from their checkpoints.
func (t *Task) Demote() error {
	if err := t.setRole(RoleIdle, RoleActive); err != nil {
		return err
	}
	t.dropActive()
	return t.StartStandby()
}

func (t *Task) dropActive() {
	t.writeMu.Lock()
	defer t.writeMu.Unlock()
	for _, s := range t.stores {
		s.abort()
		s.setBuffer(nil)
	}
	t.producer = nil
}

// Close stops any tailing, drops uncommitted writes, writes the checkpoint
// sidecar files and closes the stores. The task's directory stays.
func (t *Task) Close() error {
	if t.Role() == RoleClosed {
		return nil
	}
	// Closed first. A Restore racing with Close sees it under the apply
	// lock and gives up, and unsubscribe releases any waiter it set.
	t.role.Store(int32(RoleClosed))
	t.m.rep.unsubscribe(t)
	t.cancel()
	t.dropActive()
	t.m.writeSidecars(t)
	var errs []error
	for _, s := range t.stores {
		errs = append(errs, s.close())
	}
	t.m.taskClosed(t)
	return errors.Join(errs...)
}

func (t *Task) setRole(to Role, from ...Role) error {
	cur := t.Role()
	for _, f := range from {
		if t.role.CompareAndSwap(int32(f), int32(to)) {
			return nil
		}
	}
	if cur == RoleClosed {
		return ErrTaskClosed
	}
	return fmt.Errorf("state: task %d is %s, cannot become %s", t.id, cur, to)
}
