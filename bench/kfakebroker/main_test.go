package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestServesUntilItsInputCloses starts the broker as the driver does,
// produces to it and reads its profiles at the address it printed, then
// closes its input: it must stop.
func TestServesUntilItsInputCloses(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- run(1<<20, true, inR, outW) }()

	line, err := bufio.NewReader(outR).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = io.Copy(io.Discard, outR) }()
	f := strings.Fields(line)
	if len(f) != 4 || f[0] != "kfake" || f[2] != "pprof" {
		t.Fatalf("printed %q, want \"kfake ADDR pprof ADDR\"", line)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(f[1], ",")...), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 2, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("produce to the broker at %s: %v", f[1], err)
	}
	resp, err := http.Get("http://" + f[3] + "/debug/pprof/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET its profiles: %s", resp.Status)
	}

	inW.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("still running after its input closed")
	}
}

func TestRefusesANonPositiveSegmentSize(t *testing.T) {
	err := run(0, false, strings.NewReader(""), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "-segment-bytes 0") {
		t.Fatalf("run with -segment-bytes 0: %v, want an error naming the flag", err)
	}
}
