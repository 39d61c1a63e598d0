// Package boundedread reads a whole input from outside the process (a file
// named on the command line, stdin) with a size limit and a way out: every
// read is bounded (docs/design.md §10, "every read from outside is bounded") and
// ends when its context does, so that `rackstream assign </dev/zero` fails
// at once naming the limit instead of eating memory, and a read from a pipe
// whose writer has gone silent ends on SIGINT or SIGTERM.
//
// The read itself runs in a goroutine: a blocking read(2) on a pipe, a
// terminal or a FIFO cannot be interrupted otherwise. When the context ends
// first, the reader is closed (when it is a file: a pollable one, a pipe or
// a FIFO, then unblocks) and the call returns at once; a read that is
// blocked in the kernel on a non-pollable descriptor may finish later in the
// background, which is harmless to a command that is about to exit.
package boundedread

import (
	"context"
	"fmt"
	"io"
	"os"
	"syscall"
)

// Limits of the inputs Rackstream reads whole. They are generous for honest
// inputs and small enough that a hostile or mistaken one (a device, an
// endless pipe) cannot exhaust memory.
const (
	// PlacementDocument bounds a `rackstream assign` input: a scenario or a
	// /v1/metadata document. 1,000 instances x 10,000 tasks with two
	// standbys is about 2 MiB of JSON; 64 MiB leaves room for far larger.
	PlacementDocument = 64 << 20
	// PropertiesFile bounds a configuration file (`--config`).
	PropertiesFile = 1 << 20
	// CredentialFile bounds a file of TLS material a configuration names:
	// a certificate, a private key, a CA bundle, a key or trust store. A
	// system's whole CA bundle is about 200 KiB.
	CredentialFile = 4 << 20
)

// TooLargeError is an input longer than its limit.
type TooLargeError struct {
	// Name names the input: a path, or "stdin".
	Name string
	// Limit is the limit in bytes.
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s is larger than the limit of %s for this input", e.Name, Size(e.Limit))
}

// NotRegularError is a path that names something other than a regular file
// (a directory, a device, a FIFO, a socket) where a file is expected.
type NotRegularError struct {
	Name string
	Mode os.FileMode
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s is not a regular file (%s)", e.Name, kind(e.Mode))
}

// Size renders a byte count the way limits are documented: "64 MiB
// (67108864 bytes)" for whole mebibytes, else "N bytes".
func Size(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB (%d bytes)", n>>20, n)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB (%d bytes)", n>>10, n)
	}
	return fmt.Sprintf("%d bytes", n)
}

// ReadAll reads r to its end, at most limit bytes, or until ctx ends. name
// names r in errors ("stdin"). More than limit bytes is a *TooLargeError
// (read no further than limit+1 bytes); a context that ends first is an error
// wrapping ctx.Err(). When r is an io.Closer it is closed if ctx ends first,
// to unblock the read.
func ReadAll(ctx context.Context, r io.Reader, name string, limit int64) ([]byte, error) {
	return wait(ctx, name, closerOf(r), func() ([]byte, error) { return readLimited(r, name, limit) })
}

// ReadFile reads the file at path as ReadAll does. A directory is refused;
// any other kind of file (a FIFO, a device, /dev/stdin) is read with the same
// bound, so that process substitution (`<(curl ...)`) works. Opening runs
// under ctx too: opening a FIFO blocks until it has a writer.
func ReadFile(ctx context.Context, path string, limit int64) ([]byte, error) {
	return readFile(ctx, path, limit, false)
}

// ReadRegularFile reads the file at path as ReadFile does, but refuses
// anything that is not a regular file with a *NotRegularError, before
// reading a byte: for inputs that are only ever files, such as a
// configuration.
func ReadRegularFile(ctx context.Context, path string, limit int64) ([]byte, error) {
	return readFile(ctx, path, limit, true)
}

func readFile(ctx context.Context, path string, limit int64, regularOnly bool) ([]byte, error) {
	flags := os.O_RDONLY
	if regularOnly {
		// Without it, opening a FIFO would block until a writer came;
		// O_NONBLOCK changes nothing for a regular file.
		flags |= syscall.O_NONBLOCK
	}
	opened := make(chan *os.File, 1)
	return wait(ctx, path, func() {
		if f := <-opened; f != nil {
			f.Close()
		}
	}, func() ([]byte, error) {
		f, err := os.OpenFile(path, flags, 0)
		opened <- f
		if err != nil {
			return nil, err
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return nil, err
		}
		if st.IsDir() || regularOnly && !st.Mode().IsRegular() {
			return nil, &NotRegularError{Name: path, Mode: st.Mode()}
		}
		return readLimited(f, path, limit)
	})
}

// readLimited reads r to its end, failing past limit bytes.
func readLimited(r io.Reader, name string, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, &TooLargeError{Name: name, Limit: limit}
	}
	return data, nil
}

// wait runs read in a goroutine and returns its result, or an error wrapping
// ctx.Err() as soon as ctx ends, after calling abandon (when not nil) in the
// background to unblock the read.
func wait(ctx context.Context, name string, abandon func(), read func() ([]byte, error)) ([]byte, error) {
	type result struct {
		data []byte
		err  error
	}
	done := make(chan result, 1)
	go func() {
		data, err := read()
		done <- result{data, err}
	}()
	select {
	case r := <-done:
		return r.data, r.err
	case <-ctx.Done():
		if abandon != nil {
			go abandon()
		}
		return nil, fmt.Errorf("read %s: interrupted: %w", name, context.Cause(ctx))
	}
}

func closerOf(r io.Reader) func() {
	if c, ok := r.(io.Closer); ok {
		return func() { c.Close() }
	}
	return nil
}

func kind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a device"
	}
	return "mode " + m.String()
}
