package kclient

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// A real client at log.level=info connects and fetches metadata and logs
// none of it; at debug the same work is logged.
func TestFranzGoIsQuietUnlessDebug(t *testing.T) {
	fc := fakeCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, level := range []slog.Level{slog.LevelInfo, slog.LevelDebug} {
		buf := new(logBuffer)
		kc := newClients(t, load(t, fc.ListenAddrs()), slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: level})))
		if err := client(t, kc.Opts(PurposeAdmin)).Ping(ctx); err != nil {
			t.Fatal(err)
		}
		if logged := strings.Contains(buf.String(), "kafka_client="); logged != (level == slog.LevelDebug) {
			t.Errorf("at %v franz-go logged = %t:\n%s", level, logged, buf)
		}
	}
}
