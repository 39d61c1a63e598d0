package query

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// scanAll pages through a scan from n and returns the keys in the order
// received (decoded per key_encoding) and the number of pages.
func (c *cluster) scanAll(n *node, store, query string, b64 bool) (keys []string, values []any, pages int) {
	c.t.Helper()
	cursor := ""
	for {
		q := query
		if cursor != "" {
			q += "&cursor=" + url.QueryEscape(cursor)
		}
		a := c.get(n, "/v1/stores/"+store+"/scan?"+q)
		if a.code != http.StatusOK {
			c.t.Fatalf("scan %s page %d: %s", q, pages+1, a)
		}
		pages++
		for _, it := range a.json["items"].([]any) {
			m := it.(map[string]any)
			k, _ := m["key"].(string)
			if b, ok := m["key_base64url"].(string); ok {
				raw, err := base64.RawURLEncoding.DecodeString(b)
				if err != nil {
					c.t.Fatal(err)
				}
				k = string(raw)
			} else if b64 {
				raw, err := base64.RawURLEncoding.DecodeString(k)
				if err != nil {
					c.t.Fatal(err)
				}
				k = string(raw)
			}
			if c.task([]byte(k)) != int32(m["task"].(float64)) {
				c.t.Errorf("key %q reported in task %v, belongs to %d", k, m["task"], c.task([]byte(k)))
			}
			keys = append(keys, k)
			values = append(values, m["value"])
		}
		next, _ := a.json["next_cursor"].(string)
		if next == "" {
			return keys, values, pages
		}
		if pages > 10000 {
			c.t.Fatal("scan does not end")
		}
		cursor = next
	}
}

func TestScanReturnsEveryKeyExactlyOnceAcrossPages(t *testing.T) {
	c := newCluster(t, clusterOpts{})
	var want []string
	for i := range 203 {
		k := fmt.Sprintf("key-%03d", i)
		c.put(storeCounts, []byte(k), []byte(fmt.Sprint(i)))
		want = append(want, k)
	}
	for _, limit := range []int{1, 7, 100, 203, 1000} {
		for _, n := range c.nodes {
			keys, values, pages := c.scanAll(n, storeCounts, fmt.Sprintf("limit=%d", limit), false)
			if !slices.Equal(keys, want) {
				t.Fatalf("limit %d via %s: got %d keys, want %d in order: %v", limit, n.id, len(keys), len(want), keys)
			}
			if values[5] != float64(5) {
				t.Errorf("value of key-005 = %v", values[5])
			}
			if wantPages := (203 + limit - 1) / limit; pages != wantPages && pages != wantPages+1 {
				t.Errorf("limit %d: %d pages, want %d", limit, pages, wantPages)
			}
		}
	}
}

func TestScanRangesAndPrefixes(t *testing.T) {
	c := newCluster(t, clusterOpts{})
	all := []string{"a", "a\x00", "ab", "abc", "abd", "b", "ba", "c", "\xff", "\xff\xff"}
	for _, k := range all {
		c.put(storeNames, []byte(k), []byte("v"+k))
	}
	filter := func(f func(string) bool) []string {
		var out []string
		for _, k := range all {
			if f(k) {
				out = append(out, k)
			}
		}
		return out
	}
	b64 := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for _, tc := range []struct {
		name, query string
		b64         bool
		want        []string
	}{
		{"everything", "limit=3", false, all},
		{"prefix", "limit=2&prefix=ab", false, filter(func(k string) bool { return strings.HasPrefix(k, "ab") })},
		{"from inclusive, to exclusive", "limit=2&from=ab&to=ba", false, filter(func(k string) bool { return k >= "ab" && k < "ba" })},
		{"prefix and from", "limit=1&prefix=a&from=abd", false, []string{"abd"}},
		{"prefix and to", "limit=1&prefix=a&to=abc", false, []string{"a", "a\x00", "ab"}},
		{"empty range", "from=b&to=b", false, nil},
		{"to empty is empty", "to=", false, nil},
		{"prefix of 0xff bytes", "limit=1&key_encoding=base64url&prefix=" + b64("\xff"), true, []string{"\xff", "\xff\xff"}},
		{"binary bounds", "limit=2&key_encoding=base64url&from=" + b64("a\x00") + "&to=" + b64("abd"), true, []string{"a\x00", "ab", "abc"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			keys, _, _ := c.scanAll(c.nodes[1], storeNames, tc.query, tc.b64)
			if !slices.Equal(keys, tc.want) {
				t.Errorf("got %q, want %q", keys, tc.want)
			}
		})
	}
}

func TestScanOfSomeTasks(t *testing.T) {
	c := newCluster(t, clusterOpts{})
	keys := keysPerTask(c.tasks, 4)
	var want []string
	for _, k := range keys {
		c.put(storeCounts, k, []byte("1"))
		if t := c.task(k); t == 1 || t == 4 {
			want = append(want, string(k))
		}
	}
	slices.Sort(want)
	got, _, _ := c.scanAll(c.nodes[0], storeCounts, "limit=3&tasks=4,1", false)
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestScanFallsBackToStandbysWithMaxLagElse503(t *testing.T) {
	c := newCluster(t, clusterOpts{})
	var want []string
	for i := range 60 {
		k := fmt.Sprintf("s%02d", i)
		c.put(storeCounts, []byte(k), []byte("1"))
		want = append(want, k)
	}
	c.nodes[2].stop()
	a := c.get(c.nodes[0], "/v1/stores/counts/scan")
	if a.code != http.StatusServiceUnavailable || !strings.Contains(a.errMsg(), "active n3 could not be reached") || a.header.Get("Retry-After") == "" {
		t.Fatalf("owner down, no max_lag: %s", a)
	}
	keys, _, _ := c.scanAll(c.nodes[0], storeCounts, "limit=7&max_lag=0", false)
	if !slices.Equal(keys, want) {
		t.Errorf("owner down, max_lag: got %q, want %q", keys, want)
	}
	a = c.get(c.nodes[0], "/v1/stores/counts/scan?max_lag=0")
	served := a.json["served_by"].(map[string]any)
	if _, ok := served["n3"]; ok || len(served) != 2 {
		t.Errorf("served_by %v", served)
	}
}

func TestScanOfARestoringTaskIs503(t *testing.T) {
	c := newCluster(t, clusterOpts{})
	c.nodes[1].rt.replica(storeCounts, 1).set(func(s *ReplicaStatus) { s.Role = RoleRestoring })
	a := c.get(c.nodes[0], "/v1/stores/counts/scan")
	if a.code != http.StatusServiceUnavailable || !strings.Contains(a.errMsg(), "task 1: active n2 answered 503: ") ||
		!strings.Contains(a.errMsg(), "n2's replica of task 1 is restoring") {
		t.Errorf("%s", a)
	}
}

func TestScanPageCursorContinuesAfterItsLastKey(t *testing.T) {
	req := scanRequest{store: "s", prefix: []byte("p")}
	cur := encodeCursor(req.identity(), []byte("pa"))
	got, err := parseScanRequest("s", "prefix=p&cursor="+cur, 64, 10)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.start, []byte("pa\x00")) || !bytes.Equal(got.end, []byte("q")) {
		t.Errorf("range [%q, %q)", got.start, got.end)
	}
}

func TestScanOverManyTasksFitsTheHeaderLimit(t *testing.T) {
	// 3 instances x 12,000 tasks: each owner's task list, written out,
	// would be larger than a peer accepts in a request line.
	c := newCluster(t, clusterOpts{tasks: 12000})
	var want []string
	for i := range 300 {
		k := fmt.Sprintf("m%03d", i)
		c.put(storeCounts, []byte(k), []byte("1"))
		want = append(want, k)
	}
	keys, _, _ := c.scanAll(c.nodes[0], storeCounts, "limit=100", false)
	if !slices.Equal(keys, want) {
		t.Errorf("got %d keys, want %d", len(keys), len(want))
	}
}

func TestScanOfAValueTheCodecCannotDecodeIs500NamingTheKey(t *testing.T) {
	c := newCluster(t, clusterOpts{})
	c.put(storeCounts, []byte("fine"), []byte("1"))
	c.put(storeCounts, []byte("garbled"), []byte("not a number"))
	for _, n := range c.nodes {
		a := c.get(n, "/v1/stores/counts/scan")
		if a.code != http.StatusInternalServerError || !strings.Contains(a.errMsg(), `value of key "garbled" in store counts does not decode with the store's codec`) {
			t.Errorf("via %s: %s", n.id, a)
		}
	}
	// A page that stops before the bad value is fine.
	if a := c.get(c.nodes[0], "/v1/stores/counts/scan?to=g"); a.code != http.StatusOK {
		t.Errorf("page before the bad value: %s", a)
	}
}

// A stored key may be longer than a request's key limit (MaxKeyBytes): a
// scan pages past it through every instance, whichever instance holds the
// keys after it, and a cursor that names such a key is accepted.
func TestScanPagesPastKeysLongerThanTheRequestLimit(t *testing.T) {
	c := newCluster(t, clusterOpts{})
	var want []string
	for i := range 12 {
		k := fmt.Sprintf("k%02d", i)
		if i%3 == 1 {
			k += strings.Repeat("x", 5000+i)
		}
		c.put(storeCounts, []byte(k), []byte(fmt.Sprint(i)))
		want = append(want, k)
	}
	slices.Sort(want)
	for _, n := range c.nodes {
		for _, q := range []string{"limit=1", "limit=2", "limit=5&prefix=k", "limit=1&from=k01&to=k10", "limit=1&max_lag=0"} {
			keys, _, _ := c.scanAll(n, storeCounts, q, false)
			w := want
			if strings.Contains(q, "from=") {
				w = want[1:10]
			}
			if !slices.Equal(keys, w) {
				t.Errorf("%s via %s: got %d keys, want %d", q, n.id, len(keys), len(w))
			}
		}
	}
	// A cursor past every key, naming a key longer than any bound a
	// request may carry: an empty last page, not a 503.
	cur := encodeCursor((&scanRequest{store: storeCounts}).identity(), []byte("k99"+strings.Repeat("z", 8000)))
	if a := c.get(c.nodes[0], "/v1/stores/counts/scan?cursor="+cur); a.code != http.StatusOK || len(a.json["items"].([]any)) != 0 {
		t.Errorf("cursor past every key: %s", a)
	}
}

// A scan whose bounds and cursor, forwarded, would not fit a peer's request
// line can never succeed: 400, not 503 with Retry-After.
func TestAScanTooLongToForwardIs400(t *testing.T) {
	c := newCluster(t, clusterOpts{})
	prefix := strings.Repeat("p", 4096)
	cur := encodeCursor((&scanRequest{store: storeCounts, prefix: []byte(prefix)}).identity(), []byte(prefix+strings.Repeat("q", 3000)))
	a := c.get(c.nodes[0], "/v1/stores/counts/scan?prefix="+prefix+"&cursor="+cur)
	if a.code != http.StatusBadRequest || !strings.Contains(a.errMsg(), "too long to forward") || a.header.Get("Retry-After") != "" {
		t.Errorf("%.300s", a)
	}
}

// A peer that refuses a forwarded scan as it is (400, or a request line
// too long) will refuse it again: 400, not 503 with Retry-After.
func TestAScanAPeerRefusesIs400(t *testing.T) {
	for _, code := range []int{http.StatusBadRequest, http.StatusRequestHeaderFieldsTooLarge} {
		peer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, code, errorBody{Error: "refused", Code: "bad_request"})
		}))
		defer peer.Close()
		c := newCluster(t, clusterOpts{members: 2})
		key := c.repoint(c.nodes[0], 1, peer.Listener.Addr().String())
		a := c.get(c.nodes[0], fmt.Sprintf("/v1/stores/counts/scan?tasks=%d", c.task(key)))
		if a.code != http.StatusBadRequest || !strings.Contains(a.errMsg(), fmt.Sprintf("answered %d", code)) || a.header.Get("Retry-After") != "" {
			t.Errorf("peer answering %d: %s", code, a)
		}
	}
}
