package state

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// lockFileName is the lock file in an application's state directory.
const lockFileName = "LOCK"

// LockedError is returned by Open when another holder has the state
// directory locked: another process, or another Manager in this process.
type LockedError struct {
	// Dir is the locked application state directory.
	Dir string
	// PID is the holder's process id as written in the lock file, 0 if it
	// could not be read.
	PID int
}

func (e *LockedError) Error() string {
	holder := "an unknown process"
	if e.PID > 0 {
		holder = "pid " + strconv.Itoa(e.PID)
		if e.PID == os.Getpid() {
			holder += " (this process: another instance already has it open)"
		}
	}
	return fmt.Sprintf("state directory %s is locked by %s: only one instance may use a state directory at a time", e.Dir, holder)
}

// dirLock is an exclusive flock on dir/LOCK. flock locks belong to an open
// file description, so a second open of the same file conflicts, even in
// this process. That is what refuses a second in-process instance.
type dirLock struct {
	f *os.File
}

func lockDir(dir string) (*dirLock, error) {
	path := filepath.Join(dir, lockFileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("state: open lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, &LockedError{Dir: dir, PID: readLockPID(path)}
		}
		return nil, fmt.Errorf("state: lock %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		_, err = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("state: write pid to lock file %s: %w", path, err)
	}
	return &dirLock{f: f}, nil
}

func readLockPID(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0
	}
	return pid
}

// unlock releases the lock. The pid stays in the file: it is only read
// when the flock is held by someone, so a stale pid is never reported.
func (l *dirLock) unlock() error {
	return l.f.Close() // closing the last descriptor releases the flock
}
