package client

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rackstream/rackstream/partition"
)

func TestJoinRecordsAsksTheKeysActiveForItsTimeRange(t *testing.T) {
	f := newFakeCluster(t, false, "", 6, "a", "b", "c")
	seen := serveWindows(f, func(id string, r *http.Request) any {
		key, _ := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(r.URL.Path, "/v1/stores/joined/windows/"))
		return map[string]any{"key": base64.RawURLEncoding.EncodeToString(key), "task": partition.Murmur2().Partition(key, 6),
			"records":   []map[string]any{{"side": "left", "timestamp": 5, "offset": 3, "value": "click"}, {"side": "right", "timestamp": 7, "offset": 1, "value": 9}},
			"served_by": id, "role": "active", "lag": 0, "position": 4, "generation": 1}
	})
	c := f.client(Options{})
	key := "user/7"
	kr, err := c.JoinRecords(t.Context(), "joined", []byte(key), time.UnixMilli(0), time.UnixMilli(100))
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := kr.Records[1].Decode(&n); err != nil || n != 9 {
		t.Errorf("right record's value %d (%v), want 9", n, err)
	}
	if len(kr.Records) != 2 || kr.Records[0].Side != "left" || !kr.Records[0].Timestamp.Equal(time.UnixMilli(5)) || kr.Records[0].Offset != 3 ||
		string(kr.Records[1].Key) != key || kr.ServedBy != f.activeOf(key) || kr.Position != 4 {
		t.Errorf("records %+v", kr)
	}
	want := f.activeOf(key) + " /v1/stores/joined/windows/" + base64.RawURLEncoding.EncodeToString([]byte(key)) + "?key_encoding=base64url&time_from=0&time_to=100"
	if got := seen(); len(got) != 1 || got[0] != want {
		t.Errorf("requests %q, want %q", got, want)
	}
}

func TestAllJoinRecordsPagesWithTheCursor(t *testing.T) {
	f := newFakeCluster(t, false, "", 2, "a", "b")
	pages := map[string]string{
		"":   `{"records":[{"key":"YQ","side":"left","timestamp":1,"offset":0,"value":"x","task":0},{"key":"Yg","side":"right","timestamp":1,"offset":4,"value":2,"task":1}],"next_cursor":"c1","generation":1}`,
		"c1": `{"records":[{"key":"YQ","side":"left","timestamp":3,"offset":1,"value":"y","task":0}],"generation":1}`,
	}
	serveWindows(f, func(_ string, r *http.Request) any { return json.RawMessage(pages[r.URL.Query().Get("cursor")]) })
	c := f.client(Options{})
	req := WindowsRequest{Limit: 2}
	var got []string
	for {
		page, err := c.AllJoinRecords(t.Context(), "joined", req)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page.Records {
			got = append(got, fmt.Sprintf("%s %s@%d#%d=%s/%d", r.Key, r.Side, r.Timestamp.UnixMilli(), r.Offset, r.Raw, r.Task))
		}
		if page.NextCursor == "" {
			break
		}
		req.Cursor = page.NextCursor
	}
	if strings.Join(got, " ") != `a left@1#0="x"/0 b right@1#4=2/1 a left@3#1="y"/0` {
		t.Errorf("records %v", got)
	}
}
