package state

import "fmt"

// ApplySource applies one record of the store's changelog partition, read
// by the active task itself. Such a store is a table whose changelog is a
// topic someone else writes, which the task keeps reading while it
// processes: Kafka Streams' source-topic changelog. Restore and standbys
// fill it like any other store. Once the task is active, its records come
// through here instead of through Put and Delete, and nothing is produced.
//
// The write goes to the write buffer, which Get and Scan see. The next
// Commit writes it with the checkpoint offset+1 in one LevelDB batch, so
// data and checkpoint agree as for any store. A nil value deletes the key.
// A record at or below the last offset applied is skipped: one the restore
// already applied, fetched again from an older committed offset. applied
// reports whether the record was new.
func (s *DB) ApplySource(offset int64, key, value []byte) (applied bool, err error) {
	t := s.task
	if s.buf == nil {
		return false, fmt.Errorf("state: apply %s/%d offset %d to store %s of task %d: task is %s, not active", s.changelog, s.partition, offset, s.name, s.partition, t.Role())
	}
	if err := t.Err(); err != nil {
		return false, err
	}
	if offset <= s.maxAcked.Load() {
		return false, nil
	}
	tag := bufValue
	if value == nil {
		tag = bufTombstone
	}
	if err := s.buf.put(key, tag, value); err != nil {
		return false, fmt.Errorf("state: buffer %s/%d offset %d in store %s of task %d: %w", s.changelog, s.partition, offset, s.name, s.partition, err)
	}
	// maxAcked is what Commit turns into the checkpoint; nothing is
	// produced to a source changelog, so nothing else moves it.
	s.maxAcked.Store(offset)
	return true, nil
}
