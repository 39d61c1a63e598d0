package kclient

import (
	"context"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kgo"
)

// slogLogger forwards franz-go's log lines to a slog.Logger. franz-go asks
// Level before building a line's arguments, so the level follows the
// handler's: a logger at info costs nothing for franz-go's debug lines.
type slogLogger struct{ l *slog.Logger }

func newLogger(l *slog.Logger) kgo.Logger { return slogLogger{l} }

func (s slogLogger) Level() kgo.LogLevel {
	ctx := context.Background()
	switch {
	case s.l.Enabled(ctx, slog.LevelDebug):
		return kgo.LogLevelDebug
	case s.l.Enabled(ctx, slog.LevelInfo):
		return kgo.LogLevelInfo
	case s.l.Enabled(ctx, slog.LevelWarn):
		return kgo.LogLevelWarn
	case s.l.Enabled(ctx, slog.LevelError):
		return kgo.LogLevelError
	}
	return kgo.LogLevelNone
}

func (s slogLogger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	var l slog.Level
	switch level {
	case kgo.LogLevelError:
		l = slog.LevelError
	case kgo.LogLevelWarn:
		l = slog.LevelWarn
	case kgo.LogLevelInfo:
		l = slog.LevelInfo
	case kgo.LogLevelDebug:
		l = slog.LevelDebug
	default:
		return
	}
	s.l.Log(context.Background(), l, msg, keyvals...)
}
