package query

import (
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func keyPath(store string, key []byte) string {
	return "/v1/stores/" + store + "/keys/" + url.PathEscape(string(key))
}

func TestKeyIsReadFromTheActiveThroughEveryInstance(t *testing.T) {
	c := newCluster(t, clusterOpts{})
	key := []byte("user-42")
	c.put(storeCounts, key, []byte("17"))
	owner := c.owner(key)
	for _, n := range c.nodes {
		a := c.get(n, keyPath(storeCounts, key))
		if a.code != http.StatusOK {
			t.Fatalf("via %s: %s", n.id, a)
		}
		if a.json["value"] != float64(17) || a.json["key"] != "user-42" || a.json["served_by"] != owner.id ||
			a.json["role"] != "active" || a.json["lag"] != float64(0) || a.json["task"] != float64(c.task(key)) ||
			a.json["position"] != float64(1) || a.json["generation"] != float64(7) {
			t.Errorf("via %s: %s", n.id, a)
		}
	}
}

func TestValuesRenderThroughTheStoreCodec(t *testing.T) {
	c := newCluster(t, clusterOpts{})
	key := []byte("k")
	c.put(storeDocs, key, []byte(`{"n":1,"tags":["a"]}`))
	c.put(storeNames, key, []byte(`plain text`))
	c.put(storeRaw, key, []byte{0, 1, 0xff})
	for _, tc := range []struct{ store, want string }{
		{storeDocs, `"value":{"n":1,"tags":["a"]}`},
		{storeNames, `"value":"plain text"`},
		{storeRaw, `"value":"AAH/"`},
	} {
		a := c.get(c.nodes[0], keyPath(tc.store, key))
		if a.code != http.StatusOK || !strings.Contains(string(a.body), tc.want) {
			t.Errorf("%s: got %s, want %s", tc.store, a, tc.want)
		}
	}
}

func TestBinaryKeysTravelAsBase64URL(t *testing.T) {
	c := newCluster(t, clusterOpts{})
	key := []byte{0xff, 0xfe, '/', 0, '?'}
	c.put(storeCounts, key, []byte("5"))
	enc := base64.RawURLEncoding.EncodeToString(key)
	for _, n := range c.nodes {
		for _, path := range []string{
			"/v1/stores/counts/keys/" + enc + "?key_encoding=base64url",
			"/v1/stores/counts/keys/" + base64.URLEncoding.EncodeToString(key) + "?key_encoding=base64url", // padded
		} {
			a := c.get(n, path)
			if a.code != http.StatusOK || a.json["key"] != enc || a.json["value"] != float64(5) {
				t.Errorf("via %s %s: %s", n.id, path, a)
			}
		}
	}
	// A key with '/' escaped in the path, and one that is not valid UTF-8
	// without base64url: echoed as key_base64url.
	slash := []byte("a/b c")
	c.put(storeCounts, slash, []byte("6"))
	if a := c.get(c.nodes[0], keyPath(storeCounts, slash)); a.code != http.StatusOK || a.json["key"] != "a/b c" {
		t.Errorf("escaped slash: %s", a)
	}
	if a := c.get(c.nodes[0], "/v1/stores/counts/keys/a/b%20c"); a.code != http.StatusOK || a.json["key"] != "a/b c" {
		t.Errorf("raw slash: %s", a)
	}
	if a := c.get(c.nodes[0], "/v1/stores/counts/keys/%FF%FE%2F%00%3F"); a.code != http.StatusOK || a.json["key_base64url"] != enc {
		t.Errorf("non-UTF-8 key: %s", a)
	}
}

func TestAbsentKeyIs404ThroughEveryInstance(t *testing.T) {
	c := newCluster(t, clusterOpts{})
	for _, n := range c.nodes {
		a := c.get(n, keyPath(storeCounts, []byte("nobody")))
		if a.code != http.StatusNotFound || !strings.Contains(a.errMsg(), `key "nobody" not found in store counts`) {
			t.Errorf("via %s: %s", n.id, a)
		}
	}
}

func TestMaxLagPrefersTheLocalStandby(t *testing.T) {
	c := newCluster(t, clusterOpts{})
	key := []byte("near")
	c.put(storeCounts, key, []byte("3"))
	sb := c.standby(key)
	sb.rt.replica(storeCounts, c.task(key)).set(func(s *ReplicaStatus) { s.Lag = 4 })
	a := c.get(sb, keyPath(storeCounts, key)+"?max_lag=4")
	if a.code != http.StatusOK || a.json["served_by"] != sb.id || a.json["role"] != "standby" || a.json["lag"] != float64(4) {
		t.Fatalf("%s", a)
	}
	// Without max_lag the standby forwards to the active.
	a = c.get(sb, keyPath(storeCounts, key))
	if a.code != http.StatusOK || a.json["served_by"] != c.owner(key).id || a.json["role"] != "active" {
		t.Fatalf("%s", a)
	}
	// A standby behind max_lag forwards to the active too.
	a = c.get(sb, keyPath(storeCounts, key)+"?max_lag=3")
	if a.code != http.StatusOK || a.json["served_by"] != c.owner(key).id {
		t.Fatalf("%s", a)
	}
}

func TestOwnerDownStandbyAnswersWithinMaxLagElse503(t *testing.T) {
	c := newCluster(t, clusterOpts{})
	key := []byte("failover")
	c.put(storeCounts, key, []byte("9"))
	owner, sb, other := c.owner(key), c.standby(key), c.other(key)
	sb.rt.replica(storeCounts, c.task(key)).set(func(s *ReplicaStatus) { s.Lag = 2 })
	owner.stop()

	a := c.get(other, keyPath(storeCounts, key))
	if a.code != http.StatusServiceUnavailable || a.header.Get("Retry-After") != "1" ||
		!strings.Contains(a.errMsg(), "active "+owner.id+" could not be reached") {
		t.Fatalf("owner down, no max_lag: %s", a)
	}
	a = c.get(other, keyPath(storeCounts, key)+"?max_lag=5")
	if a.code != http.StatusOK || a.json["served_by"] != sb.id || a.json["role"] != "standby" || a.json["lag"] != float64(2) {
		t.Fatalf("owner down, max_lag=5: %s", a)
	}
	a = c.get(other, keyPath(storeCounts, key)+"?max_lag=1")
	if a.code != http.StatusServiceUnavailable || !strings.Contains(a.errMsg(), "lag 2 > max_lag 1") {
		t.Fatalf("owner down, standby too far behind: %s", a)
	}
}

func TestRestoringOrMovingTaskAnswers503WithRetryAfter(t *testing.T) {
	c := newCluster(t, clusterOpts{})
	key := []byte("restoring")
	owner := c.owner(key)
	owner.rt.replica(storeCounts, c.task(key)).set(func(s *ReplicaStatus) {
		s.Role, s.Reason = RoleRestoring, "restoring from the changelog"
	})
	for _, n := range c.nodes {
		a := c.get(n, keyPath(storeCounts, key))
		if a.code != http.StatusServiceUnavailable || a.header.Get("Retry-After") == "" ||
			!strings.Contains(a.errMsg(), fmt.Sprintf("%s's replica of task %d is restoring: restoring from the changelog", owner.id, c.task(key))) {
			t.Errorf("via %s: %s", n.id, a)
		}
	}
	// A task in transit has no active.
	p := *c.p
	p.Tasks = append(p.Tasks[:0:0], p.Tasks...)
	p.Tasks[c.task(key)].Active = -1
	c.nodes[0].rt.mu.Lock()
	c.nodes[0].rt.p = &p
	c.nodes[0].rt.mu.Unlock()
	a := c.get(c.nodes[0], keyPath(storeCounts, key))
	if a.code != http.StatusServiceUnavailable || !strings.Contains(a.errMsg(), "has no active instance at generation 7") || a.header.Get("Retry-After") == "" {
		t.Errorf("in transit: %s", a)
	}
}

func TestMinPositionRefusesALaggingReplica(t *testing.T) {
	c := newCluster(t, clusterOpts{})
	key := []byte("mono")
	for i := range 5 {
		c.put(storeCounts, key, []byte(fmt.Sprint(i)))
	}
	owner, sb := c.owner(key), c.standby(key)
	// The standby is two records behind the active.
	sb.rt.replica(storeCounts, c.task(key)).set(func(s *ReplicaStatus) { s.Position, s.Lag = 3, 2 })

	a := c.get(sb, keyPath(storeCounts, key)+"?max_lag=10")
	if a.code != http.StatusOK || a.json["position"] != float64(3) || a.json["served_by"] != sb.id {
		t.Fatalf("standby read: %s", a)
	}
	// Switching to a replica that is behind what the client saw: the
	// local standby refuses, the active answers.
	a = c.get(sb, keyPath(storeCounts, key)+"?max_lag=10&min_position=5")
	if a.code != http.StatusOK || a.json["served_by"] != owner.id || a.json["position"] != float64(5) {
		t.Fatalf("min_position=5: %s", a)
	}
	// Nobody has reached 6: 409 from every instance.
	for _, n := range c.nodes {
		a = c.get(n, keyPath(storeCounts, key)+"?max_lag=10&min_position=6")
		if a.code != http.StatusConflict || !strings.Contains(a.errMsg(), "behind min_position 6") {
			t.Errorf("via %s: min_position=6: %s", n.id, a)
		}
	}
	// The owner down, the lagging standby refuses.
	owner.stop()
	a = c.get(c.other(key), keyPath(storeCounts, key)+"?max_lag=10&min_position=4")
	if a.code != http.StatusConflict || !strings.Contains(a.errMsg(), sb.id+" (standby) is at position 3, behind min_position 4") {
		t.Errorf("owner down: %s", a)
	}
}

func TestNoPlacementYetIs503(t *testing.T) {
	c := newCluster(t, clusterOpts{members: 1})
	n := c.nodes[0]
	n.rt.mu.Lock()
	n.rt.p = nil
	n.rt.mu.Unlock()
	for _, path := range []string{"/v1/stores/counts/keys/a", "/v1/stores/counts/scan", "/v1/metadata"} {
		a := c.get(n, path)
		if a.code != http.StatusServiceUnavailable || !strings.Contains(a.errMsg(), "no placement yet") || a.header.Get("Retry-After") == "" {
			t.Errorf("%s: %s", path, a)
		}
	}
}

func TestAValueTheCodecCannotDecodeIs500NamingTheKey(t *testing.T) {
	c := newCluster(t, clusterOpts{})
	key := []byte("garbled")
	c.put(storeCounts, key, []byte("not a number"))
	for _, n := range []*node{c.owner(key), c.other(key)} {
		a := c.get(n, keyPath(storeCounts, key))
		if a.code != http.StatusInternalServerError || !strings.Contains(a.errMsg(), `value of key "garbled" in store counts does not decode with the store's codec`) {
			t.Errorf("via %s: %s", n.id, a)
		}
	}
}

// silentPeer accepts connections and never answers until the test ends:
// a frozen instance, or one whose network is cut.
func silentPeer(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { close(done); ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { <-done; conn.Close() }()
		}
	}()
	return ln
}

func TestMaxLagReadDoesNotWaitOutASilentActive(t *testing.T) {
	// A forward timeout longer than the test client's: a read waiting
	// out the silent active fails.
	c := newCluster(t, clusterOpts{tweak: func(_ int, o *Options) { o.ForwardTimeout = time.Hour }})
	via := c.nodes[0]
	key := c.repoint(via, 1, silentPeer(t).Addr().String())
	sb := c.standby(key)
	if sb == via {
		t.Fatalf("test setup: %s is the standby", via.id)
	}
	c.put(storeCounts, key, []byte("8"))
	for i := range 3 { // and again, the first attempt's probe still hanging
		a := c.get(via, keyPath(storeCounts, key)+"?max_lag=10")
		if a.code != http.StatusOK || a.json["served_by"] != sb.id || a.json["role"] != "standby" {
			t.Fatalf("read %d: %s", i, a)
		}
	}
}

func TestAPeerThatFailedIsAskedLastForAWhile(t *testing.T) {
	// The active's endpoint accepts connections and closes them at once.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int64
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			conn.Close()
		}
	}()
	c := newCluster(t, clusterOpts{})
	via := c.nodes[0]
	key := c.repoint(via, 1, ln.Addr().String())
	sb := c.standby(key)
	c.put(storeCounts, key, []byte("4"))

	// The first read asks the active, which fails, then the standby.
	a := c.get(via, keyPath(storeCounts, key)+"?max_lag=10")
	if a.code != http.StatusOK || a.json["served_by"] != sb.id {
		t.Fatalf("first read: %s", a)
	}
	asked := accepted.Load()
	if asked == 0 {
		t.Fatal("the first read never asked the active")
	}
	// Remembered: the standby answers without the active being asked.
	for i := range 3 {
		a = c.get(via, keyPath(storeCounts, key)+"?max_lag=10")
		if a.code != http.StatusOK || a.json["served_by"] != sb.id {
			t.Fatalf("read %d: %s", i, a)
		}
	}
	if n := accepted.Load(); n != asked {
		t.Errorf("the failed active was asked %d more times while a standby could answer", n-asked)
	}
	// A read of actives only still asks it: it is all there is.
	a = c.get(via, keyPath(storeCounts, key))
	if a.code != http.StatusServiceUnavailable || !strings.Contains(a.errMsg(), "active n2 could not be reached") {
		t.Errorf("actives only: %s", a)
	}
	if accepted.Load() == asked {
		t.Error("a read of actives only did not ask the one active")
	}
}
