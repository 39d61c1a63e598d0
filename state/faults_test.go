package state

import (
	"sync"
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

// gatedDisk holds every storage write, once armed, until gate is closed,
// and closes blocked when the first write arrives.
type gatedDisk struct {
	armed   atomic.Bool
	once    sync.Once
	gate    chan struct{}
	blocked chan struct{}
}

func (g *gatedDisk) wait() {
	if !g.armed.Load() {
		return
	}
	g.once.Do(func() { close(g.blocked) })
	<-g.gate
}

type gatedStorage struct {
	storage.Storage
	g *gatedDisk
}

func (s gatedStorage) Create(fd storage.FileDesc) (storage.Writer, error) {
	w, err := s.Storage.Create(fd)
	if err != nil {
		return nil, err
	}
	return gatedWriter{w, s.g}, nil
}

type gatedWriter struct {
	storage.Writer
	g *gatedDisk
}

func (w gatedWriter) Write(p []byte) (int, error) {
	w.g.wait()
	return w.Writer.Write(p)
}
