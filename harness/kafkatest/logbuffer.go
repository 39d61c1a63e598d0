package kafkatest

import (
	"bytes"
	"log/slog"
	"sync"
)

// LogBuffer collects log lines that goroutines write while a test reads
// them: an io.Writer for slog handlers.
//
//	var logs kafkatest.LogBuffer
//	srv := New(Options{Logger: logs.Logger()})
//	...
//	if !strings.Contains(logs.String(), "forward failed") { ... }
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer // guarded by mu
}

func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *LogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Logger returns a text logger at debug level that writes to b.
func (b *LogBuffer) Logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
