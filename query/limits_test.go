package query

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rackstream/rackstream/harness/kafkatest"
)

func TestForwardsBeyondTheLimitAre503(t *testing.T) {
	// A peer that holds every request until released.
	release := make(chan struct{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	slow := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release
		writeJSON(w, http.StatusOK, map[string]any{"served_by": "slow"})
	})}
	go slow.Serve(ln)
	defer slow.Close()

	c := newCluster(t, clusterOpts{members: 2, tweak: func(_ int, o *Options) { o.MaxForwards = 1 }})
	key := c.repoint(c.nodes[0], 1, ln.Addr().String())
	first := make(chan answer, 1)
	go func() { first <- c.get(c.nodes[0], keyPath(storeCounts, key)) }()
	kafkatest.Eventually(t, 10*time.Second, "first forward in flight", func() bool {
		return counter(t, c.nodes[0], "rackstream_http_forwards_in_flight", nil) == 1
	})
	a := c.get(c.nodes[0], keyPath(storeCounts, key))
	if a.code != http.StatusServiceUnavailable || !strings.Contains(a.errMsg(), "too many forwarded requests in flight (1)") || a.header.Get("Retry-After") == "" {
		t.Errorf("second request: %s", a)
	}
	if n := forwards(t, c.nodes[0], routeKeys, resultRejected); n != 1 {
		t.Errorf("rejected forwards = %v, want 1", n)
	}
	close(release)
	if a := <-first; a.code != http.StatusOK || a.json["served_by"] != "slow" {
		t.Errorf("first request: %s", a)
	}
	// A local read needs no forward slot.
	var local []byte
	for _, k := range keysPerTask(c.tasks, 1) {
		if c.owner(k).id == "n1" {
			local = k
		}
	}
	c.put(storeCounts, local, []byte("1"))
	if a := c.get(c.nodes[0], keyPath(storeCounts, local)); a.code != http.StatusOK {
		t.Errorf("local read: %s", a)
	}
}

// Forwarded scans hold at most half the forward slots: with every slot a
// scan may take held by scans a peer has not answered, a lookup still
// forwards.
func TestForwardedScansCannotStarveLookups(t *testing.T) {
	// A peer that holds every scan until released and answers lookups.
	release := make(chan struct{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	releaseAll := sync.OnceFunc(func() { close(release) })
	peer := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/scan") {
			<-release
			writeJSON(w, http.StatusOK, map[string]any{"items": []any{}, "generation": 7})
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"served_by": "peer"})
	})}
	go peer.Serve(ln)
	defer peer.Close()
	defer releaseAll()

	const slots = 4
	c := newCluster(t, clusterOpts{members: 2, tweak: func(_ int, o *Options) { o.MaxForwards = slots }})
	key := c.repoint(c.nodes[0], 1, ln.Addr().String())
	scan := fmt.Sprintf("/v1/stores/counts/scan?tasks=%d", c.task(key))
	// Scans until one is refused: each either waits on the peer (one more
	// forward in flight) or comes back refused.
	scans := make(chan answer, slots+1)
	held := 0
	for refused := false; !refused; {
		if held == slots {
			t.Fatalf("%d scans hold every forward slot", held)
		}
		go func() { scans <- c.get(c.nodes[0], scan) }()
		kafkatest.Eventually(t, 10*time.Second, "a scan forwarded or refused", func() bool {
			if counter(t, c.nodes[0], "rackstream_http_forwards_in_flight", nil) == float64(held+1) {
				held++
				return true
			}
			select {
			case a := <-scans:
				if a.code != http.StatusServiceUnavailable || !strings.Contains(a.errMsg(), "too many forwarded scans in flight") {
					t.Errorf("refused scan: %s", a)
				}
				refused = true
				return true
			default:
				return false
			}
		})
	}
	if held != slots/2 {
		t.Errorf("%d scans in flight when one was refused, want %d", held, slots/2)
	}
	if a := c.get(c.nodes[0], keyPath(storeCounts, key)); a.code != http.StatusOK || a.json["served_by"] != "peer" {
		t.Errorf("lookup while scans hold their slots: %s", a)
	}
	releaseAll()
	for range held {
		if a := <-scans; a.code != http.StatusOK {
			t.Errorf("held scan: %s", a)
		}
	}
}

func TestForwardTimeoutBoundsASilentOwner(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0") // accepts, never answers
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c := newCluster(t, clusterOpts{members: 2, tweak: func(_ int, o *Options) { o.ForwardTimeout = 200 * time.Millisecond }})
	key := c.repoint(c.nodes[0], 1, ln.Addr().String())
	a := c.get(c.nodes[0], keyPath(storeCounts, key))
	if a.code != http.StatusServiceUnavailable || !strings.Contains(a.errMsg(), "active n2 did not answer within 200ms") {
		t.Errorf("%s", a)
	}
}

// repoint makes n see member at endpoint, and returns a key whose task
// that member owns.
func (c *cluster) repoint(n *node, member int, endpoint string) []byte {
	n.rt.mu.Lock()
	p := *c.p
	p.Members = append(p.Members[:0:0], p.Members...)
	p.Members[member].Endpoint = endpoint
	n.rt.p = &p
	n.rt.mu.Unlock()
	for _, k := range keysPerTask(c.tasks, 1) {
		if c.owner(k) == c.nodes[member] {
			return k
		}
	}
	c.t.Fatalf("member %d owns no task", member)
	return nil
}
