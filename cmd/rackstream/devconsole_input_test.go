package main

import (
	"bufio"
	"context"
	"io"
	"strings"
	"testing"
	"time"
)

func TestDevConsoleSaysSoAndGoesOnAfterAnOverlongLine(t *testing.T) {
	var out strings.Builder
	d := &devCluster{out: &lockedWriter{w: &out}}
	in := strings.NewReader("help\n" + strings.Repeat("k", 100<<10) + "\nstatus\n")
	d.console(context.Background(), in)
	got := out.String()
	if !strings.Contains(got, "commands:") {
		t.Fatalf("help is not answered:\n%.300s", got)
	}
	if !strings.Contains(got, "line too long") {
		t.Errorf("the overlong line is not reported:\n%.300s", got)
	}
	if !strings.Contains(got, "records produced") {
		t.Errorf("the console stops reading after the overlong line:\n%.300s", got)
	}
	if len(got) > 4<<10 {
		t.Errorf("the console echoes the overlong line (%d bytes)", len(got))
	}
}

func TestReadLineKeepsLinesUpToItsLimit(t *testing.T) {
	r := bufio.NewReaderSize(strings.NewReader("abcd\nabcde\r\n\nab"), 16)
	type got struct {
		text string
		size int
		err  error
	}
	want := []got{{"abcd", 4, nil}, {"", 6, errLineTooLong}, {"", 0, nil}, {"ab", 2, nil}, {"", 0, io.EOF}}
	for i, w := range want {
		text, size, err := readLine(r, 5)
		if text != w.text || size != w.size || err != w.err {
			t.Errorf("line %d: readLine = %q, %d, %v; want %q, %d, %v", i, text, size, err, w.text, w.size, w.err)
		}
	}
	long := bufio.NewReaderSize(strings.NewReader(strings.Repeat("x", 100)+"\nok\n"), 16)
	if _, size, err := readLine(long, 50); size != 100 || err != errLineTooLong {
		t.Errorf("a line past the reader's buffer: %d, %v", size, err)
	}
	if text, _, err := readLine(long, 50); text != "ok" || err != nil {
		t.Errorf("the line after: %q, %v", text, err)
	}
}

// devConsoleSilentReader never answers, for a console that must end with
// its context.
type devConsoleSilentReader struct{ ctx context.Context }

func (r devConsoleSilentReader) Read([]byte) (int, error) {
	<-r.ctx.Done()
	return 0, io.EOF
}

func TestDevConsoleEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	d := &devCluster{out: &lockedWriter{w: io.Discard}}
	done := make(chan struct{})
	go func() {
		d.console(ctx, devConsoleSilentReader{ctx})
		close(done)
	}()
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the console does not end with its context")
	}
}
