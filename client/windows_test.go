package client

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rackstream/rackstream/partition"
)

// serveWindows makes f's instances answer window reads with answer, and
// records each window request as "<instance> <path>?<query>".
func serveWindows(f *fakeCluster, answer func(id string, r *http.Request) any) func() []string {
	var mu sync.Mutex
	var seen []string
	for id, srv := range f.servers {
		inner := srv.Config.Handler
		srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !strings.Contains(r.URL.Path, "/windows") {
				inner.ServeHTTP(w, r)
				return
			}
			mu.Lock()
			seen = append(seen, id+" "+r.URL.Path+"?"+r.URL.RawQuery)
			mu.Unlock()
			json.NewEncoder(w).Encode(answer(id, r))
		})
	}
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}

func TestWindowsAsksTheKeysActiveForItsTimeRange(t *testing.T) {
	f := newFakeCluster(t, false, "", 6, "a", "b", "c")
	seen := serveWindows(f, func(id string, r *http.Request) any {
		key, _ := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(r.URL.Path, "/v1/stores/count/windows/"))
		return map[string]any{"key": base64.RawURLEncoding.EncodeToString(key), "task": partition.Murmur2().Partition(key, 6),
			"windows":   []map[string]any{{"start": 0, "end": 60000, "value": 2}, {"start": 60000, "end": 120000, "value": 1}},
			"served_by": id, "role": "active", "lag": 0, "position": 9, "generation": 1}
	})
	c := f.client(Options{})
	key := "user/7"
	kw, err := c.Windows(t.Context(), "count", []byte(key), time.UnixMilli(0), time.UnixMilli(120000), MinPosition(3))
	if err != nil {
		t.Fatal(err)
	}
	owner := f.activeOf(key)
	var n int
	if err := kw.Windows[1].Decode(&n); err != nil || n != 1 {
		t.Errorf("second window's value %d (%v), want 1", n, err)
	}
	if len(kw.Windows) != 2 || !kw.Windows[0].Start.Equal(time.UnixMilli(0)) || !kw.Windows[1].End.Equal(time.UnixMilli(120000)) ||
		string(kw.Windows[0].Key) != key || kw.ServedBy != owner || kw.Position != 9 {
		t.Errorf("windows %+v", kw)
	}
	want := owner + " /v1/stores/count/windows/" + base64.RawURLEncoding.EncodeToString([]byte(key)) + "?key_encoding=base64url&min_position=3&time_from=0&time_to=120000"
	if got := seen(); len(got) != 1 || got[0] != want {
		t.Errorf("requests %q, want %q", got, want)
	}
}

func TestAllWindowsPagesWithTheCursor(t *testing.T) {
	f := newFakeCluster(t, false, "", 2, "a", "b")
	pages := map[string]string{
		"":   `{"windows":[{"key":"YQ","start":0,"end":10,"value":1,"task":0},{"key":"Yg","start":0,"end":10,"value":2,"task":1}],"next_cursor":"c1","generation":1}`,
		"c1": `{"windows":[{"key":"YQ","start":10,"end":20,"value":3,"task":0}],"generation":1}`,
	}
	seen := serveWindows(f, func(_ string, r *http.Request) any { return json.RawMessage(pages[r.URL.Query().Get("cursor")]) })
	c := f.client(Options{})
	req := WindowsRequest{From: time.UnixMilli(0), Limit: 2}
	var got []string
	for {
		page, err := c.AllWindows(t.Context(), "count", req, ReadMaxLag(5))
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range page.Windows {
			got = append(got, fmt.Sprintf("%s@%d=%s/%d", w.Key, w.Start.UnixMilli(), w.Raw, w.Task))
		}
		if page.NextCursor == "" {
			break
		}
		req.Cursor = page.NextCursor
	}
	if strings.Join(got, " ") != "a@0=1/0 b@0=2/1 a@10=3/0" {
		t.Errorf("windows %v", got)
	}
	reqs := seen()
	if len(reqs) != 2 {
		t.Fatalf("requests %q", reqs)
	}
	for i, r := range reqs {
		_, rawURL, _ := strings.Cut(r, " ")
		u, _ := url.Parse(rawURL)
		q := u.Query()
		if u.Path != "/v1/stores/count/windows" || q.Get("time_from") != "0" || q.Has("time_to") || q.Get("limit") != "2" || q.Get("max_lag") != "5" ||
			q.Get("cursor") != map[int]string{0: "", 1: "c1"}[i] {
			t.Errorf("request %d: %s", i, r)
		}
	}
}
