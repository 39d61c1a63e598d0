package query

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// putRecord stores key's join record in every replica of key's task of
// the join's store, in the order the store reads them.
func (c *cluster) putRecord(key, side string, ts, offset int64, value string) {
	task := c.task([]byte(key))
	for _, node := range c.nodes {
		if r := node.rt.replica(storeJoin, task); r != nil {
			r.mu.Lock()
			r.wins = append(r.wins, StoredWindow{Key: []byte(key), Start: ts, End: ts, Side: side, Offset: offset, Value: []byte(value)})
			r.status.Position++
			r.mu.Unlock()
		}
	}
}

func TestAKeysJoinRecordsAreAnsweredAsRecordsFromAnyInstance(t *testing.T) {
	c := newCluster(t, clusterOpts{})
	c.putRecord("user/7", "left", 100, 4, "click")
	c.putRecord("user/7", "right", 100, 2, "9")
	c.putRecord("user/7", "left", 300, 8, "late")
	c.putRecord("other", "left", 100, 1, "x")
	key := []byte("user/7")
	for _, n := range c.nodes {
		a := c.get(n, "/v1/stores/joined/windows/user/7?time_from=50&time_to=200")
		want := `{"key":"user/7","records":[{"side":"left","timestamp":100,"offset":4,"value":"click"},{"side":"right","timestamp":100,"offset":2,"value":9}],"task":%d,"served_by":"%s","role":"active","lag":0,"position":4,"generation":7}`
		if got, w := string(a.body), fmt.Sprintf(want, c.task(key), c.owner(key).id); a.code != http.StatusOK || strings.TrimSpace(got) != w {
			t.Errorf("from %s: %s\nwant 200 %s", n.id, a, w)
		}
	}
	if a := c.get(c.nodes[0], "/v1/stores/joined/windows/user/7?time_from=1000"); a.code != http.StatusOK || !strings.Contains(string(a.body), `"records":[]`) {
		t.Errorf("no record in range: %s, want 200 with no records", a)
	}
	if a := c.get(c.standby(key), "/v1/stores/joined/windows/user/7?max_lag=0"); a.code != http.StatusOK || a.json["role"] != "standby" {
		t.Errorf("a standby with max_lag=0: %s, want its own answer", a)
	}
}

func TestEveryKeysJoinRecordsArePagedOnceAcrossTasks(t *testing.T) {
	c := newCluster(t, clusterOpts{})
	var want []string
	for i, k := range keysPerTask(c.tasks, 2) {
		for _, ts := range []int64{10, 20} {
			for _, side := range []string{"left", "right"} {
				v := "v"
				if side == "right" {
					v = "1"
				}
				c.putRecord(string(k), side, ts, int64(i), v)
				want = append(want, fmt.Sprintf("%d %s %02d %s", ts, side, i, k))
			}
		}
	}
	c.putRecord("late", "left", 600, 0, "v") // outside the range
	slices.Sort(want)                        // timestamp, side, offset
	var got []string
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > len(want) {
			t.Fatal("the pages do not end")
		}
		q := "/v1/stores/joined/windows?time_to=100&limit=3"
		if cursor != "" {
			q += "&cursor=" + url.QueryEscape(cursor)
		}
		a := c.get(c.nodes[pages%len(c.nodes)], q)
		if a.code != http.StatusOK {
			t.Fatalf("page %d: %s", pages, a)
		}
		for _, r := range a.json["records"].([]any) {
			m := r.(map[string]any)
			got = append(got, fmt.Sprintf("%v %v %02d %v", m["timestamp"], m["side"], int(m["offset"].(float64)), m["key"]))
		}
		next, _ := a.json["next_cursor"].(string)
		if next == "" {
			break
		}
		cursor = next
	}
	if !slices.Equal(got, want) {
		t.Errorf("records across pages\n%q\nwant\n%q", got, want)
	}
}

func TestJoinStoreReadsRefuseWhatTheyCannotAnswer(t *testing.T) {
	c := newCluster(t, clusterOpts{members: 1})
	for _, tc := range []struct{ name, path, want string }{
		{"a time range backwards", "/v1/stores/joined/windows/a?time_from=10&time_to=5", "time_from 10 is after time_to 5"},
		{"a time that is not a number", "/v1/stores/joined/windows?time_from=x", `time_from "x": want epoch milliseconds`},
		{"a join store by key", "/v1/stores/joined/keys/a", "store joined is a stream-stream join's store: read it at /v1/stores/joined/windows/{key}"},
		{"a join store scanned", "/v1/stores/joined/scan", "store joined is a stream-stream join's store"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := c.get(c.nodes[0], tc.path)
			if a.code != http.StatusBadRequest || !strings.Contains(a.errMsg(), tc.want) {
				t.Errorf("GET %s: %s, want 400 with %q", tc.path, a, tc.want)
			}
		})
	}
}

func TestJoinItemKeysRoundTripInPageOrder(t *testing.T) {
	a := joinItemKey(-5, "right", 3, []byte("k"))
	b := joinItemKey(7, "left", 9, []byte("a"))
	c := joinItemKey(7, "right", 1, []byte("a"))
	if !(string(a) < string(b) && string(b) < string(c)) {
		t.Errorf("byte order is not timestamp, then side")
	}
	ts, side, off, key, ok := splitJoinItemKey(a)
	if !ok || ts != -5 || side != "right" || off != 3 || string(key) != "k" {
		t.Errorf("split: %d %s %d %q %v", ts, side, off, key, ok)
	}
	if _, _, _, _, ok := splitJoinItemKey(windowKey(1, 2, nil)); ok {
		t.Error("a window's 16-byte key split as a join record's")
	}
}
