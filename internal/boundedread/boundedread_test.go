package boundedread

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestReadAllBoundsTheInput(t *testing.T) {
	tests := []struct {
		name    string
		size    int
		limit   int64
		tooLong bool
	}{
		{"empty", 0, 10, false},
		{"under the limit", 9, 10, false},
		{"exactly the limit", 10, 10, false},
		{"one byte over", 11, 10, true},
		{"far over", 1 << 20, 10, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := bytes.Repeat([]byte{'x'}, tt.size)
			data, err := ReadAll(context.Background(), bytes.NewReader(in), "stdin", tt.limit)
			var tl *TooLargeError
			if tt.tooLong {
				if !errors.As(err, &tl) || tl.Name != "stdin" || tl.Limit != tt.limit {
					t.Fatalf("err = %v, want a *TooLargeError for stdin and %d", err, tt.limit)
				}
				return
			}
			if err != nil || !bytes.Equal(data, in) {
				t.Fatalf("got %d bytes, %v; want %d bytes", len(data), err, tt.size)
			}
		})
	}
}

func TestErrorsNameTheLimit(t *testing.T) {
	for _, tt := range []struct {
		limit int64
		want  string
	}{
		{PlacementDocument, "stdin is larger than the limit of 64 MiB (67108864 bytes)"},
		{PropertiesFile, "1 MiB (1048576 bytes)"},
		{4 << 10, "4 KiB (4096 bytes)"},
		{1000, "1000 bytes"},
	} {
		if got := (&TooLargeError{Name: "stdin", Limit: tt.limit}).Error(); !strings.Contains(got, tt.want) {
			t.Errorf("limit %d: %q lacks %q", tt.limit, got, tt.want)
		}
	}
}

// TestReadAllFromASilentPipeEndsWithTheContext: a writer that never writes
// nor closes must not hold the read once the context ends (SIGTERM in a
// command), and the pipe is closed so the reading goroutine ends too.
func TestReadAllFromASilentPipeEndsWithTheContext(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := ReadAll(ctx, pr, "stdin", PlacementDocument)
		errc <- err
	}()
	// Prove the reader is waiting: a first write is consumed.
	if _, err := pw.Write([]byte("{")); err != nil {
		t.Fatal(err)
	}
	cancel()
	err := <-errc
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "read stdin: interrupted") {
		t.Fatalf("err = %v, want an interruption wrapping context.Canceled", err)
	}
	// The abandoned read was unblocked by closing the pipe: writes fail.
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := pw.Write([]byte("x")); errors.Is(err, io.ErrClosedPipe) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the pipe was not closed after the context ended")
		}
	}
}

func TestReadFileKinds(t *testing.T) {
	dir := t.TempDir()
	regular := filepath.Join(dir, "scenario.json")
	if err := os.WriteFile(regular, []byte(`{"tasks": 1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, bytes.Repeat([]byte{' '}, 101), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	for _, read := range []func(context.Context, string, int64) ([]byte, error){ReadFile, ReadRegularFile} {
		if data, err := read(ctx, regular, 100); err != nil || string(data) != `{"tasks": 1}` {
			t.Fatalf("regular file: %q, %v", data, err)
		}
		var tl *TooLargeError
		if _, err := read(ctx, big, 100); !errors.As(err, &tl) || tl.Name != big {
			t.Fatalf("101 bytes with a limit of 100: err = %v", err)
		}
		var nr *NotRegularError
		if _, err := read(ctx, dir, 100); !errors.As(err, &nr) || !strings.Contains(err.Error(), "a directory") {
			t.Fatalf("directory: err = %v", err)
		}
		if _, err := read(ctx, filepath.Join(dir, "missing"), 100); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("missing file: err = %v", err)
		}
	}

	// A device: ReadFile bounds it, ReadRegularFile refuses it.
	var tl *TooLargeError
	if _, err := ReadFile(ctx, "/dev/zero", 1<<10); !errors.As(err, &tl) {
		t.Fatalf("ReadFile(/dev/zero) = %v, want *TooLargeError", err)
	}
	var nr *NotRegularError
	if _, err := ReadRegularFile(ctx, "/dev/zero", 1<<10); !errors.As(err, &nr) || !strings.Contains(err.Error(), "character device") {
		t.Fatalf("ReadRegularFile(/dev/zero) = %v, want *NotRegularError", err)
	}
}

func TestReadFileOnAFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
	// ReadRegularFile refuses it at once, without waiting for a writer.
	var nr *NotRegularError
	if _, err := ReadRegularFile(context.Background(), fifo, 100); !errors.As(err, &nr) || !strings.Contains(err.Error(), "named pipe") {
		t.Fatalf("ReadRegularFile(fifo) = %v, want *NotRegularError", err)
	}

	// ReadFile reads it (process substitution), with the bound...
	ctx := context.Background()
	errc := make(chan error, 1)
	var got []byte
	go func() {
		var err error
		got, err = ReadFile(ctx, fifo, 100)
		errc <- err
	}()
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("hello"))
	w.Close()
	if err := <-errc; err != nil || string(got) != "hello" {
		t.Fatalf("ReadFile(fifo) = %q, %v", got, err)
	}

	// ...and gives up when the context ends while no writer comes: opening
	// a FIFO blocks until one does.
	cctx, cancel := context.WithCancel(ctx)
	go func() {
		_, err := ReadFile(cctx, fifo, 100)
		errc <- err
	}()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("ReadFile(silent fifo) after cancel = %v, want context.Canceled", err)
	}
	// Release the abandoned open so the goroutine ends.
	if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
		w.Close()
	}
}
