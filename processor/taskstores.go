package processor

import (
	"context"
	"fmt"
	"time"

	"github.com/rackstream/rackstream/state"
)

// openStores is taskEnv.openStores on a state directory: a held standby is
// promoted, catching up its lag; otherwise the task's stores are opened
// and restored from their checkpoints. Either way they end active,
// producing their changelog records with prod.
func openStores(mgr *state.Manager, specs []state.StoreSpec, prod state.Producer) func(context.Context, int32, *state.Task) (*state.Task, error) {
	return func(ctx context.Context, id int32, st *state.Task) (*state.Task, error) {
		if st == nil {
			st = mgr.Task(id)
		}
		if st != nil && st.Role() == state.RoleActive {
			// A dropped predecessor of this task whose commit outlived
			// the drop: its stores close when that commit ends (drop).
			if err := waitClosed(ctx, st, droppedTaskWait); err != nil {
				return nil, fmt.Errorf("stores are still active, held by an earlier owner's commit: %w", err)
			}
			st = mgr.Task(id)
		}
		// A closed incarnation's changelog records still in flight would
		// fail this one's (state.Manager.WaitProduced).
		if err := mgr.WaitProduced(ctx, id); err != nil {
			return nil, err
		}
		var err error
		if st == nil {
			if st, err = mgr.OpenTask(id, specs); err != nil {
				return nil, err
			}
		}
		switch st.Role() {
		case state.RoleStandby:
			err = st.Promote(ctx, prod)
		case state.RoleIdle:
			if err = st.Restore(ctx); err == nil {
				err = st.Activate(prod)
			}
		default:
			err = fmt.Errorf("stores are %s", st.Role())
		}
		return st, err
	}
}

// droppedTaskWait bounds how long a task's start waits for the stores a
// dropped predecessor still holds: its commit ends when its requests fail
// (the transaction timeout, 10 s, under exactly-once) or its session's
// client closes.
const droppedTaskWait = 60 * time.Second

// waitClosed waits until st is no longer active, polling: closing is rare
// and has no notification.
func waitClosed(ctx context.Context, st *state.Task, within time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for st.Role() == state.RoleActive {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return nil
}
