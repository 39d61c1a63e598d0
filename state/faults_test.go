package state

import (
	"sync/atomic"
	"syscall"

	"github.com/syndtr/goleveldb/leveldb/storage"
)

// fullDisk wraps a goleveldb storage so that, while full is set, every
// write and every file creation fails with ENOSPC, as on a full disk.
type fullDisk struct {
	storage.Storage
	full *atomic.Bool
}

func (d fullDisk) Create(fd storage.FileDesc) (storage.Writer, error) {
	if d.full.Load() {
		return nil, &pathError{"create", fd.String(), syscall.ENOSPC}
	}
	w, err := d.Storage.Create(fd)
	if err != nil {
		return nil, err
	}
	return fullDiskWriter{w, d.full}, nil
}

type fullDiskWriter struct {
	storage.Writer
	full *atomic.Bool
}

func (w fullDiskWriter) Write(p []byte) (int, error) {
	if w.full.Load() {
		return 0, &pathError{"write", "", syscall.ENOSPC}
	}
	return w.Writer.Write(p)
}

func (w fullDiskWriter) Sync() error {
	if w.full.Load() {
		return &pathError{"sync", "", syscall.ENOSPC}
	}
	return w.Writer.Sync()
}

type pathError struct {
	op, path string
	err      error
}

func (e *pathError) Error() string { return e.op + " " + e.path + ": " + e.err.Error() }
func (e *pathError) Unwrap() error { return e.err }
