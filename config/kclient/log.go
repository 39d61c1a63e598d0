package kclient

import (
	"context"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kgo"
)

// slogLogger forwards franz-go's log lines to a slog.Logger.
//
// franz-go's INFO lines (every connection, metadata refresh, join and
// heartbeat round) describe the client's normal work and drowned an
// instance's own log, so they are passed on only when the handler is at
// debug (log.level=debug), together with franz-go's debug lines; otherwise
// franz-go logs from WARN up. franz-go asks Level before building a line's
// arguments, so a line below the level costs nothing.
type slogLogger struct{ l *slog.Logger }

func newLogger(l *slog.Logger) kgo.Logger { return slogLogger{l} }

func (s slogLogger) Level() kgo.LogLevel {
	ctx := context.Background()
	switch {
	case s.l.Enabled(ctx, slog.LevelDebug):
		return kgo.LogLevelDebug
	case s.l.Enabled(ctx, slog.LevelWarn):
		return kgo.LogLevelWarn
	case s.l.Enabled(ctx, slog.LevelError):
		return kgo.LogLevelError
	}
	return kgo.LogLevelNone
}

func (s slogLogger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	if level > s.Level() {
		// franz-go checks Level itself; this keeps INFO out for callers
		// that do not.
		return
	}
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
