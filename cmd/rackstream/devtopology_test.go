package main

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/rackstream/rackstream/harness/cluster"
	"github.com/rackstream/rackstream/harness/kafkatest"
)

// TestDevServesAWindowStoreBesideTheCount runs dev with its producer and
// reads both stores the way its Try lines do.
func TestDevServesAWindowStoreBesideTheCount(t *testing.T) {
	c := kafkatest.New(t)
	out := new(cluster.Lines)
	d, err := startDev(t.Context(), devOptions{instances: 1, partitions: 2, rate: 100, brokers: strings.Join(c.Brokers, ","),
		app: c.Name("dev-windows"), logLevel: "info"}, slog.LevelInfo, out)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	base := "http://" + d.instance("i1").addr + "/v1/stores/"
	var scan struct {
		Items []struct {
			Key   string `json:"key"`
			Value int64  `json:"value"`
		} `json:"items"`
	}
	kafkatest.Eventually(t, 2*time.Minute, "a counted key", func() bool {
		code, _ := cluster.GetJSON(base+devCountStore+"/scan?limit=1", &scan)
		return code == 200 && len(scan.Items) == 1 && scan.Items[0].Value > 0
	})
	var wins struct {
		Windows []struct {
			Start, End int64
			Value      int64 `json:"value"`
		} `json:"windows"`
	}
	key := scan.Items[0].Key
	kafkatest.Eventually(t, time.Minute, "the key's windows", func() bool {
		code, _ := cluster.GetJSON(base+devWindowStore+"/windows/"+key, &wins)
		return code == 200 && len(wins.Windows) > 0
	})
	for _, w := range wins.Windows {
		if w.End-w.Start != 60_000 || w.Value < 1 {
			b, _ := json.Marshal(wins)
			t.Fatalf("windows of %s: %s, want one-minute windows with a count", key, b)
		}
	}
	kafkatest.Eventually(t, time.Minute, "the Try lines with the window store", func() bool {
		return strings.Contains(out.String(), "/v1/stores/"+devWindowStore+"/windows/user-7")
	})
}
