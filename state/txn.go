package state

import "fmt"

// Unacknowledged reports why the changelog records produced since the
// last Commit or Abort may not be committed yet: records not acknowledged,
// or the first that failed. It returns nil when every one was
// acknowledged. Under exactly-once the caller checks it after flushing the
// transaction's records, before committing the transaction. A transaction
// must never commit with one of its changelog records missing, and
// franz-go commits whatever was acknowledged. Commit makes the same check
// before writing LevelDB.
func (t *Task) Unacknowledged() error {
	for _, s := range t.stores {
		if n := s.unacknowledged(); n != 0 {
			return fmt.Errorf("state: store %s of task %d: %d changelog records not yet acknowledged", s.name, s.partition, n)
		}
		if err := s.produceErr(); err != nil {
			return err
		}
	}
	return nil
}
