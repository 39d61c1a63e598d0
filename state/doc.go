// Package state owns local state: LevelDB stores per task, their changelog
// topics, checkpoints written atomically with the data, restore from the
// changelog and standby tailing.
package state
