// Package badfiles makes the files internal/boundedread must refuse (a FIFO,
// a device, a file over the limit), for the tests of every package that
// reads a file a configuration names.
package badfiles

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rackstream/rackstream/internal/boundedread"
)

// Refused is a path boundedread.ReadRegularFile refuses with
// boundedread.CredentialFile as its limit, and the end of the error it
// returns: the path, then Msg.
type Refused struct {
	Path string
	Msg  string
}

// CredentialFiles returns a FIFO without a writer (whose read would block
// for ever), a device (/dev/null) and a file one byte over
// boundedread.CredentialFile, made in a temporary directory of t.
func CredentialFiles(t testing.TB) []Refused {
	t.Helper()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	huge := filepath.Join(dir, "huge")
	if err := os.WriteFile(huge, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(huge, boundedread.CredentialFile+1); err != nil {
		t.Fatal(err)
	}
	return []Refused{
		{fifo, "is not a regular file (a named pipe)"},
		{"/dev/null", "is not a regular file (a character device)"},
		{huge, "is larger than the limit of " + boundedread.Size(boundedread.CredentialFile)},
	}
}

// Check runs load, which reads r.Path as the file of key, and fails t
// unless it returns an error naming key, the path and r.Msg. A load still
// blocked after ten seconds (a FIFO read without a bound) fails t at once.
func (r Refused) Check(t testing.TB, key string, load func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- load() }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), r.Path+" "+r.Msg) {
			t.Errorf("%s=%s: %v, want an error naming the key, the file and %q", key, r.Path, err, r.Msg)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s=%s: the read has not returned after 10s", key, r.Path)
	}
}
