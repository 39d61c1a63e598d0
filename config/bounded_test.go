package config

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestTheFileIsBoundedAndInterruptible: the properties file is read up to
// MaxFileSize, a directory is refused, and a read that waits on a silent
// FIFO ends when the context does (as SIGTERM ends a command's).
func TestTheFileIsBoundedAndInterruptible(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.properties")
	if err := os.WriteFile(big, []byte("#"+strings.Repeat("x", MaxFileSize)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct{ file, want string }{
		"a file past the bound": {big, "read configuration: " + big + " is larger than the limit of 1 MiB (1048576 bytes)"},
		"an endless device":     {"/dev/zero", "read configuration: /dev/zero is larger than the limit of 1 MiB (1048576 bytes)"},
		"a directory":           {dir, "read configuration: " + dir + " is not a regular file (a directory)"},
	} {
		errs := loadErrors(t, Sources{File: tc.file})
		if len(errs) != 1 || !strings.Contains(errs[0], tc.want) {
			t.Errorf("%s: errors %q, want %q", name, errs, tc.want)
		}
	}
	// A file at the bound loads.
	atBound := writeFile(t, required...)
	pad := MaxFileSize - fileSize(t, atBound)
	if err := os.WriteFile(atBound, append(readFile(t, atBound), []byte("#"+strings.Repeat("y", int(pad)-2)+"\n")...), 0o600); err != nil {
		t.Fatal(err)
	}
	if fileSize(t, atBound) != MaxFileSize {
		t.Fatalf("test file is %d bytes", fileSize(t, atBound))
	}
	mustLoad(t, Sources{File: atBound})

	fifo := filepath.Join(dir, "silent.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := LoadContext(ctx, Sources{File: fifo})
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "interrupted") {
			t.Errorf("a cancelled read of a silent FIFO: %v, want an error saying it was interrupted", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a read of a silent FIFO did not end when its context did")
	}
}

func fileSize(t *testing.T, p string) int64 {
	t.Helper()
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

func readFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
