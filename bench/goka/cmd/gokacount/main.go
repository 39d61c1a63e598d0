// Command gokacount runs bench/goka's goka count (gokabench.GokaCount) as
// one process, with goka's hot standby, and answers lookups of its group
// table over HTTP: the goka side of bench/driver's failover rows.
//
//	gokacount -brokers 127.0.0.1:19092 -group G -input T -dir DIR -listen 127.0.0.1:8081 [-session 10s]
//
// GET /keys/{key} answers 200 with {"value":N} when this instance owns the
// key's partition (goka's Processor.Get reads only owned partitions, hot
// standby or not), 503 when it does not, 404 when the key has no count.
// GET /ready answers 200 once goka reports every partition recovered.
// SIGTERM or SIGINT stop it cleanly (goka leaves the group).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/lovoo/goka"

	gokabench "github.com/rackstream/rackstream/bench/goka"
)

func main() {
	brokers := flag.String("brokers", "", "comma-separated bootstrap brokers")
	group := flag.String("group", "", "goka group (its table is <group>-table)")
	input := flag.String("input", "", "input topic, FNV-1a partitioned")
	dir := flag.String("dir", "", "state directory")
	listen := flag.String("listen", "127.0.0.1:0", "HTTP listen address")
	session := flag.Duration("session", 10*time.Second, "consumer group session timeout (sarama's default is 10s)")
	hot := flag.Bool("hot-standby", true, "goka.WithHotStandby: keep every partition's table up to date on every instance")
	flag.Parse()
	if *brokers == "" || *group == "" || *input == "" || *dir == "" {
		fmt.Fprintln(os.Stderr, "gokacount: -brokers, -group, -input and -dir are required")
		os.Exit(2)
	}
	if err := run(*brokers, *group, *input, *dir, *listen, *session, *hot); err != nil {
		fmt.Fprintln(os.Stderr, "gokacount:", err)
		os.Exit(1)
	}
}

func run(brokers, group, input, dir, listen string, session time.Duration, hot bool) error {
	cfg := gokabench.SaramaConfig()
	cfg.Consumer.Group.Session.Timeout = session
	cfg.Consumer.Group.Heartbeat.Interval = session / 3
	opts := gokabench.GokaOptions(dir, cfg)
	if hot {
		opts = append(opts, goka.WithHotStandby(), goka.WithRecoverAhead())
	}
	proc, err := goka.NewProcessor(strings.Split(brokers, ","), gokabench.GokaCount(group, input, nil), opts...)
	if err != nil {
		return fmt.Errorf("goka processor: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ready", func(w http.ResponseWriter, _ *http.Request) {
		if !proc.Recovered() {
			http.Error(w, "recovering", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /keys/{key}", func(w http.ResponseWriter, r *http.Request) {
		v, err := proc.Get(r.PathValue("key"))
		switch {
		case err != nil:
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
		case v == nil:
			http.Error(w, "no such key", http.StatusNotFound)
		default:
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"value": v})
		}
	})
	srv := &http.Server{Addr: listen, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintln(os.Stderr, "gokacount: http:", err)
			os.Exit(1)
		}
	}()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	err = proc.Run(ctx)
	_ = srv.Close()
	if err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("goka processor: %w", err)
	}
	return nil
}
