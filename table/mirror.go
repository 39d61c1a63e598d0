package table

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/partition"
	"github.com/rackstream/rackstream/state"
)

// Mirror is a read-only local copy of a compacted topic, kept current in
// the background. Its methods are safe for concurrent use.
type Mirror struct {
	topic  string
	part   partition.Partitioner
	mgr    *state.Manager
	tasks  []*state.Task          // by partition
	views  []*state.CommittedView // by partition
	cl     *kgo.Client            // end offsets for WaitCaughtUp
	adm    *kadm.Client
	tmpDir string // removed after Close; "" with StateDir
	log    *slog.Logger

	closeOnce sync.Once
	closed    chan struct{} // closed when Close has finished
	closeErr  error
}

// pollEvery is how often WaitCaughtUp looks at the checkpoints. The apply
// path has no notification for "passed offset N", and checkpoints are
// atomic loads.
const pollEvery = 10 * time.Millisecond

// Open restores every partition of topic into local LevelDB databases. It
// returns once all are caught up with the end offsets as they were when it
// started, or when ctx is done. The Mirror then keeps them current in the
// background until Close. The topic must exist.
func Open(ctx context.Context, topic string, o Options) (_ *Mirror, err error) {
	if topic == "" {
		return nil, errors.New("table: open: empty topic name")
	}
	if o.Partitioner == nil {
		o.Partitioner = partition.Murmur2()
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	kafka := o.kafkaOpts()
	r := &Mirror{topic: topic, part: o.Partitioner, log: o.Logger.With("table", topic), closed: make(chan struct{})}
	dir := o.StateDir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "rackstream-table-"); err != nil {
			return nil, fmt.Errorf("table %s: temporary state directory: %w", topic, err)
		}
		r.tmpDir = dir
	}
	defer func() {
		if err != nil {
			r.shutdown() // r, not the nil returned with err
		}
	}()
	if r.cl, err = kgo.NewClient(append(kafka, kgo.MetadataMinAge(time.Second))...); err != nil {
		return nil, fmt.Errorf("table %s: kafka client: %w", topic, err)
	}
	r.adm = kadm.NewClient(r.cl)
	n, err := r.partitions(ctx)
	if err != nil {
		return nil, err
	}
	so := state.DefaultOptions()
	so.Dir, so.ApplicationID = dir, "table-"+topic
	so.LevelDB = o.LevelDB.OrDefaults()
	so.ClientOpts = kafka
	// The last stable offset: an exactly-once writer's aborted records are
	// never applied. Without transactions it is the high watermark.
	so.ReadCommitted = true
	so.Logger, so.Registerer = r.log, o.Registerer
	r.mgr, err = state.Open(so)
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", topic, err)
	}
	spec := []state.StoreSpec{{Name: topic, Changelog: topic}}
	for p := range n {
		t, err := r.mgr.OpenTask(p, spec)
		if err != nil {
			return nil, fmt.Errorf("table %s: open partition %d: %w", topic, p, err)
		}
		r.tasks = append(r.tasks, t)
		r.views = append(r.views, t.Stores()[0].View())
	}
	// Restore every partition at once: the Manager's one consumer fetches
	// them together and applies them in parallel.
	errs := make([]error, n)
	var wg sync.WaitGroup
	for p, t := range r.tasks {
		wg.Go(func() {
			if errs[p] = t.Restore(ctx); errs[p] == nil {
				errs[p] = t.StartStandby()
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("table %s: restore: %w", topic, err)
	}
	return r, nil
}

// partitions returns the topic's partition count.
func (r *Mirror) partitions(ctx context.Context) (int32, error) {
	var details kadm.TopicDetails
	err := retry(ctx, func() error {
		var err error
		details, err = r.adm.ListTopics(ctx, r.topic)
		if err == nil {
			err = details[r.topic].Err
		}
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("table %s: describe topic: %w", r.topic, err)
	}
	n := int32(len(details[r.topic].Partitions))
	if n == 0 {
		return 0, fmt.Errorf("table %s: the topic has no partitions", r.topic)
	}
	return n, nil
}

// retry runs fn until it succeeds, a few times over a few seconds. A
// broker that just started may not know its topics yet.
func retry(ctx context.Context, fn func() error) error {
	var err error
	for wait := 100 * time.Millisecond; wait < 3*time.Second; wait *= 2 {
		if err = fn(); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(wait):
		}
	}
	return err
}

// Topic returns the topic the Mirror follows.
func (r *Mirror) Topic() string { return r.topic }

// Partitions returns the topic's partition count.
func (r *Mirror) Partitions() int32 { return int32(len(r.tasks)) }

// Partition returns the partition key lives in, by the Mirror's
// partitioner.
func (r *Mirror) Partition(key []byte) int32 {
	return r.part.Partition(key, int32(len(r.tasks)))
}

// Get returns key's value as of the Mirror's last applied offset of its
// partition; found is false for a key absent or deleted.
func (r *Mirror) Get(key []byte) (value []byte, found bool, err error) {
	p := r.Partition(key)
	value, found, err = r.views[p].Get(key)
	if err != nil {
		return nil, false, fmt.Errorf("table %s: get from partition %d: %w", r.topic, p, err)
	}
	return value, found, nil
}

// Scan calls fn for each key in [start, end) in key order across all
// partitions, until fn returns false; nil bounds are open. Each partition
// is read from a consistent snapshot of its own, and the partitions'
// snapshots are taken at slightly different moments. The slices are valid
// only during the call.
func (r *Mirror) Scan(start, end []byte, fn func(key, value []byte) bool) error {
	type cursor struct {
		next func() ([]byte, []byte, bool)
		stop func()
		k, v []byte
	}
	var (
		curs []*cursor
		mu   sync.Mutex
		errs []error
	)
	defer func() {
		for _, c := range curs {
			c.stop()
		}
	}()
	for p, v := range r.views {
		// Each partition's scan runs as a pull iterator, a coroutine, so
		// that the partitions are merged without copying them.
		next, stop := iter.Pull2(iter.Seq2[[]byte, []byte](func(yield func(k, v []byte) bool) {
			if err := v.Scan(start, end, yield); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("table %s: scan partition %d: %w", r.topic, p, err))
				mu.Unlock()
			}
		}))
		c := &cursor{next: next, stop: stop}
		curs = append(curs, c)
	}
	live := curs[:0:0]
	for _, c := range curs {
		if k, v, ok := c.next(); ok {
			c.k, c.v = k, v
			live = append(live, c)
		}
	}
	for len(live) > 0 {
		// Few partitions: a linear pick of the smallest key is as fast as
		// a heap and simpler. Keys are unique across partitions.
		min := 0
		for i := 1; i < len(live); i++ {
			if bytes.Compare(live[i].k, live[min].k) < 0 {
				min = i
			}
		}
		c := live[min]
		if !fn(c.k, c.v) {
			break
		}
		if k, v, ok := c.next(); ok {
			c.k, c.v = k, v
		} else {
			live = append(live[:min], live[min+1:]...)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	return errors.Join(errs...)
}

// Lag returns the offsets the Mirror is behind the end offsets last seen,
// summed over partitions, or -1 while some partition's end is not known.
// It is as fresh as the last fetch: records written since then are not
// counted until fetched. WaitCaughtUp asks the brokers instead.
func (r *Mirror) Lag() int64 {
	var sum int64
	for _, l := range r.Lags() {
		if l < 0 {
			return -1
		}
		sum += l
	}
	return sum
}

// Lags returns each partition's lag, by partition; -1 when not known yet.
func (r *Mirror) Lags() []int64 {
	out := make([]int64, len(r.tasks))
	for p, t := range r.tasks {
		out[p] = t.Stores()[0].Lag()
	}
	return out
}

// Positions returns each partition's checkpoint, by partition: the next
// offset it will apply.
func (r *Mirror) Positions() []int64 {
	out := make([]int64, len(r.tasks))
	for p, t := range r.tasks {
		out[p] = t.Stores()[0].Checkpoint()
	}
	return out
}

// Err returns why a partition stopped following the topic, nil while
// every partition follows it. A storage error stops a partition, and so
// does the topic recreated or truncated under it. Reads still answer from
// what was applied.
func (r *Mirror) Err() error {
	for p, t := range r.tasks {
		if err := t.Err(); err != nil {
			return fmt.Errorf("table %s: partition %d: %w", r.topic, p, err)
		}
	}
	return nil
}

// WaitCaughtUp asks the brokers for every partition's end offset as it is
// now, the last stable offset, and returns once the Mirror has applied up
// to it. Every record acknowledged before the call is then visible after
// it. It fails when ctx is done first, a partition stops following the
// topic, or the Mirror is closed.
func (r *Mirror) WaitCaughtUp(ctx context.Context) error {
	var ends kadm.ListedOffsets
	err := retry(ctx, func() error {
		var err error
		if ends, err = r.adm.ListCommittedOffsets(ctx, r.topic); err == nil {
			err = ends.Error()
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("table %s: list end offsets: %w", r.topic, err)
	}
	target := make([]int64, len(r.tasks))
	for p := range target {
		o, ok := ends.Lookup(r.topic, int32(p))
		if !ok {
			return fmt.Errorf("table %s: no end offset for partition %d", r.topic, p)
		}
		target[p] = o.Offset
	}
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		behind := -1
		for p, pos := range r.Positions() {
			if pos < target[p] {
				behind = p
				break
			}
		}
		if behind < 0 {
			return nil
		}
		if err := r.Err(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("table %s: wait for partition %d to reach offset %d (at %d): %w",
				r.topic, behind, target[behind], r.Positions()[behind], ctx.Err())
		case <-r.closed:
			return fmt.Errorf("table %s: closed while waiting to catch up", r.topic)
		case <-tick.C:
		}
	}
}

// Close stops following the topic, and closes the databases and the
// Kafka clients. It removes the databases unless StateDir was given. It
// returns ctx's error if ctx is done first; the closing then finishes in
// the background. Reads after Close fail.
func (r *Mirror) Close(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		r.closeOnce.Do(func() {
			r.closeErr = r.shutdown()
			close(r.closed)
		})
		close(done)
	}()
	select {
	case <-done:
		return r.closeErr
	case <-ctx.Done():
		return fmt.Errorf("table %s: close: %w", r.topic, ctx.Err())
	}
}

// shutdown releases whatever Open acquired.
func (r *Mirror) shutdown() error {
	var errs []error
	if r.mgr != nil {
		errs = append(errs, r.mgr.Close())
	}
	if r.cl != nil {
		r.cl.Close()
	}
	if r.tmpDir != "" {
		errs = append(errs, os.RemoveAll(r.tmpDir))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("table %s: close: %w", r.topic, err)
	}
	return nil
}
