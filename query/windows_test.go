package query

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Windows and AllWindows make every fake replica a WindowView: the server
// reads them for stores served as Windowed only.
func (r *fakeReplica) Windows(key []byte, timeFrom, timeTo int64, iso Isolation) ([]StoredWindow, int64, error) {
	ws, pos, err := r.AllWindows(timeFrom, timeTo, iso)
	ws = slices.DeleteFunc(ws, func(w StoredWindow) bool { return string(w.Key) != string(key) })
	slices.SortStableFunc(ws, func(a, b StoredWindow) int { return int(a.Start - b.Start) })
	return ws, pos, err
}

func (r *fakeReplica) AllWindows(timeFrom, timeTo int64, iso Isolation) ([]StoredWindow, int64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.isos = append(r.isos, iso)
	if r.err != nil {
		return nil, 0, r.err
	}
	var out []StoredWindow
	for _, w := range r.wins {
		if w.Start >= timeFrom && w.Start <= timeTo {
			out = append(out, w)
		}
	}
	return out, r.status.Position, nil
}

// putWindow stores key's window [start, end) with count n in every replica
// of key's task of the window store.
func (c *cluster) putWindow(key string, start, n int64) {
	task := c.task([]byte(key))
	v := strconv.AppendInt(nil, n, 10)
	for _, node := range c.nodes {
		if r := node.rt.replica(storeWins, task); r != nil {
			r.mu.Lock()
			r.wins = append(r.wins, StoredWindow{Key: []byte(key), Start: start, End: start + 60, Value: v})
			r.status.Position++
			r.mu.Unlock()
		}
	}
}

func TestAKeysWindowsAreAnsweredFromAnyInstanceOldestFirst(t *testing.T) {
	c := newCluster(t, clusterOpts{})
	c.putWindow("user/7", 120, 3)
	c.putWindow("user/7", 0, 1)
	c.putWindow("user/7", 60, 2)
	c.putWindow("other", 60, 9)
	key := []byte("user/7")
	for _, n := range c.nodes {
		a := c.get(n, "/v1/stores/wins/windows/user/7?time_from=50&time_to=120")
		want := `{"key":"user/7","windows":[{"start":60,"end":120,"value":2},{"start":120,"end":180,"value":3}],"task":%d,"served_by":"%s","role":"active","lag":0,"position":4,"generation":7}`
		if got, w := string(a.body), fmt.Sprintf(want, c.task(key), c.owner(key).id); a.code != http.StatusOK || strings.TrimSpace(got) != w {
			t.Errorf("from %s: %s\nwant 200 %s", n.id, a, w)
		}
	}
	if a := c.get(c.nodes[0], "/v1/stores/wins/windows/user/7?time_from=1000"); a.code != http.StatusOK || !strings.Contains(string(a.body), `"windows":[]`) {
		t.Errorf("no window in range: %s, want 200 with no windows", a)
	}
	if a := c.get(c.standby(key), "/v1/stores/wins/windows/user/7?max_lag=0"); a.code != http.StatusOK || a.json["role"] != "standby" || a.json["served_by"] != c.standby(key).id {
		t.Errorf("a standby with max_lag=0: %s, want its own answer", a)
	}
}

func TestEveryKeysWindowsArePagedOnceAcrossTasks(t *testing.T) {
	c := newCluster(t, clusterOpts{})
	var want []string
	for i, k := range keysPerTask(c.tasks, 2) {
		for _, start := range []int64{0, 60} {
			c.putWindow(string(k), start, int64(i))
			want = append(want, fmt.Sprintf("%d %s", start, k))
		}
	}
	c.putWindow("late", 600, 1) // outside the range
	slices.Sort(want)           // by start, then key: every window is 60 ms
	var got []string
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > len(want) {
			t.Fatal("the pages do not end")
		}
		q := "/v1/stores/wins/windows?time_from=0&time_to=100&limit=5"
		if cursor != "" {
			q += "&cursor=" + url.QueryEscape(cursor)
		}
		a := c.get(c.nodes[pages%len(c.nodes)], q)
		if a.code != http.StatusOK {
			t.Fatalf("page %d: %s", pages, a)
		}
		for _, w := range a.json["windows"].([]any) {
			m := w.(map[string]any)
			got = append(got, fmt.Sprintf("%v %v", m["start"], m["key"]))
			if m["end"].(float64)-m["start"].(float64) != 60 {
				t.Errorf("window %v: end is not start+60", m)
			}
		}
		next, _ := a.json["next_cursor"].(string)
		if next == "" {
			break
		}
		cursor = next
	}
	if !slices.Equal(got, want) {
		t.Errorf("windows across pages\n%q\nwant\n%q", got, want)
	}
}

func TestWindowReadsRefuseWhatTheyCannotAnswer(t *testing.T) {
	c := newCluster(t, clusterOpts{members: 1})
	first := c.get(c.nodes[0], "/v1/stores/wins/windows?time_to=100")
	for _, tc := range []struct{ name, path, want string }{
		{"a time range backwards", "/v1/stores/wins/windows/a?time_from=10&time_to=5", "time_from 10 is after time_to 5"},
		{"a time that is not a number", "/v1/stores/wins/windows?time_to=soon", `time_to "soon": want epoch milliseconds`},
		{"a negative time", "/v1/stores/wins/windows/a?time_from=-1", `time_from "-1": want epoch milliseconds`},
		{"key bounds", "/v1/stores/wins/windows?from=a", `unknown query parameter "from"`},
		{"a key-value store by time", "/v1/stores/counts/windows/a", "store counts is not windowed"},
		{"every window of a key-value store", "/v1/stores/counts/windows", "store counts is not windowed"},
		{"a window store by key", "/v1/stores/wins/keys/a", "store wins is a window store: read it at /v1/stores/wins/windows/{key}"},
		{"a window store scanned", "/v1/stores/wins/scan", "store wins is a window store"},
		{"a cursor of another range", "/v1/stores/wins/windows?time_to=99&cursor=" + cursorOf(t, first), "cursor belongs to a different scan"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := c.get(c.nodes[0], tc.path)
			if a.code != http.StatusBadRequest || !strings.Contains(a.errMsg(), tc.want) {
				t.Errorf("GET %s: %s, want 400 with %q", tc.path, a, tc.want)
			}
		})
	}
}

// cursorOf returns a cursor of the window store for a range [0, 100]: one
// made for a page that ended at window 0 of key "a".
func cursorOf(t *testing.T, a answer) string {
	t.Helper()
	if a.code != http.StatusOK {
		t.Fatalf("first page: %s", a)
	}
	req := scanRequest{store: storeWins, windows: true, timeTo: 100}
	return encodeCursor(req.identity(), windowKey(0, 60, []byte("a")))
}
