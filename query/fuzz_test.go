package query

import (
	"bytes"
	"encoding/base64"
	"net/url"
	"slices"
	"strings"
	"testing"
)

func FuzzParseKeyRequest(f *testing.F) {
	for _, s := range []struct{ path, query string }{
		{"/v1/stores/counts/keys/a", ""},
		{"/v1/stores/counts/keys/a%2Fb/c", "max_lag=3&min_position=9"},
		{"/v1/stores/c/keys/__8", "key_encoding=base64url"},
		{"/v1/stores/c/keys/%zz", "max_lag=-1"},
		{"/v1/stores//keys/", "x=1&x=2"},
		{"/v1/stores/c/scan", "limit=5"},
		{"/metrics", ""},
	} {
		f.Add(s.path, s.query)
	}
	const maxKey = 64
	f.Fuzz(func(t *testing.T, path, query string) {
		if !strings.HasPrefix(routePath(path), "/v1/stores/") || !strings.Contains(routePath(path), "/keys/") {
			return
		}
		store, key, err := parseStorePath(path)
		if err != nil {
			return
		}
		if checkStoreName(store) != nil {
			t.Fatalf("route with invalid store %q", store)
		}
		if rp := routePath(path); cleanPath(rp) != rp {
			t.Fatalf("routing path %q of %q is not clean: the mux would redirect it", rp, path)
		}
		req, err := parseKeyRequest(store, key, query, maxKey)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		if len(req.key) == 0 || len(req.key) > maxKey {
			t.Fatalf("accepted a key of %d bytes", len(req.key))
		}
		if req.maxLag < -1 || req.minPosition < -1 {
			t.Fatalf("negative bounds %d %d", req.maxLag, req.minPosition)
		}
		// The key round-trips through its canonical encoding.
		seg, q := url.PathEscape(string(req.key)), ""
		if req.base64 {
			seg, q = base64.RawURLEncoding.EncodeToString(req.key), "key_encoding=base64url"
		}
		again, err := parseKeyRequest(store, seg, q, maxKey)
		if err != nil || !bytes.Equal(again.key, req.key) {
			t.Fatalf("key %q does not round-trip via %q: %q, %v", req.key, seg, again.key, err)
		}
	})
}

func FuzzParseScanRequest(f *testing.F) {
	for _, q := range []string{
		"", "prefix=ab&limit=3", "from=a&to=b", "from=b&to=a", "to=", "prefix=%FF%FF",
		"key_encoding=base64url&from=_w&to=__8", "tasks=3,1,1", "cursor=AQAAAABhYg", "limit=0", "max_lag=2&tasks=",
	} {
		f.Add(q, []byte("last"))
	}
	const maxKey, maxLimit = 64, 50
	f.Fuzz(func(t *testing.T, query string, last []byte) {
		req, err := parseScanRequest("s", query, maxKey, maxLimit)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		if req.limit < 1 || req.limit > maxLimit {
			t.Fatalf("limit %d accepted", req.limit)
		}
		if !req.endEmpty && req.startSet && req.end != nil && bytes.Compare(req.start, req.end) >= 0 {
			t.Fatalf("non-empty range [%q, %q)", req.start, req.end)
		}
		if len(req.prefix) > 0 && req.startSet && !req.endEmpty && !bytes.HasPrefix(req.start, req.prefix) && bytes.Compare(req.start, req.prefix) < 0 {
			t.Fatalf("start %q before prefix %q", req.start, req.prefix)
		}
		// A cursor made for this scan continues strictly after last.
		cur := encodeCursor(req.identity(), last)
		q := query
		if i := strings.Index(q, "cursor="); i >= 0 {
			return // the query already has one
		}
		if q != "" {
			q += "&"
		}
		next, err := parseScanRequest("s", q+"cursor="+cur, maxKey, maxLimit)
		if err != nil {
			t.Fatalf("own cursor refused: %v", err)
		}
		if !next.endEmpty && bytes.Compare(next.start, last) <= 0 {
			t.Fatalf("page after %q starts at %q", last, next.start)
		}
		if _, err := parseScanRequest("other", q+"cursor="+cur, maxKey, maxLimit); err == nil {
			t.Fatal("another store's scan accepted the cursor")
		}
	})
}

func FuzzDecodeCursor(f *testing.F) {
	f.Add("AQAAAABhYg", uint32(0))
	f.Add("", uint32(7))
	f.Fuzz(func(t *testing.T, s string, id uint32) {
		last, err := decodeCursor(s, id)
		if err != nil {
			return
		}
		if got, err := decodeCursor(encodeCursor(id, last), id); err != nil || !bytes.Equal(got, last) {
			t.Fatalf("cursor of %q does not round-trip: %q %v", last, got, err)
		}
	})
}

func FuzzParseTasks(f *testing.F) {
	for _, s := range []string{"1,4,7", "3,1,1", "~BQ", "~", "~AA", "0", "-1", "1,,2", "~_w"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if len(v) > 4096 {
			return
		}
		tasks, err := parseTasks(v)
		if err != nil {
			return
		}
		if len(tasks) == 0 || !slices.IsSorted(tasks) || len(slices.Compact(slices.Clone(tasks))) != len(tasks) || tasks[0] < 0 {
			t.Fatalf("%q parsed to %v", v, tasks)
		}
		again, err := parseTasks(formatTasks(tasks))
		if err != nil || !slices.Equal(again, tasks) {
			t.Fatalf("%v -> %q -> %v, %v", tasks, formatTasks(tasks), again, err)
		}
	})
}
