package service

import (
	"io"
	"log/slog"
	"time"

	"github.com/rackstream/rackstream/config"
	"github.com/rackstream/rackstream/config/kclient"
	"github.com/rackstream/rackstream/internal/buildinfo"
)

// logStarting writes the instance's first line: which build this is, every
// setting that differs from its default (secrets masked by config.Entries),
// and where it listens and connects. Together with the binary it says
// everything needed to reproduce the instance's behaviour, so an operator
// reading a bug report asks for this line first.
func logStarting(log *slog.Logger, cfg *config.Config, httpURL, endpoint string, kc *kclient.Clients) {
	var set []any
	for _, e := range cfg.Entries() {
		if e.Source.Kind != config.FromDefault {
			set = append(set, slog.String(e.Key, e.Value))
		}
	}
	log.Info("rackstream starting",
		"build", buildinfo.Read(),
		slog.Group("settings", set...),
		slog.Group("listeners", "http", httpURL, "endpoint", endpoint),
		"kafka", kc)
}

// NewLogger returns the slog logger log.format and log.level describe,
// writing to w. Durations are written as Go duration strings ("1.5s") in
// both formats: slog's JSON handler would otherwise write nanoseconds.
func NewLogger(w io.Writer, format config.LogFormat, level slog.Level) *slog.Logger {
	o := &slog.HandlerOptions{Level: level, ReplaceAttr: durationString}
	if format == config.LogJSON {
		return slog.New(slog.NewJSONHandler(w, o))
	}
	return slog.New(slog.NewTextHandler(w, o))
}

// durationString is a slog ReplaceAttr that renders durations as strings.
func durationString(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		return slog.String(a.Key, a.Value.Duration().String())
	}
	if a.Value.Kind() == slog.KindAny {
		if d, ok := a.Value.Any().(time.Duration); ok {
			return slog.String(a.Key, d.String())
		}
	}
	return a
}
