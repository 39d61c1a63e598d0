package query

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rackstream/rackstream/assignor"
	"github.com/rackstream/rackstream/assignor/balancer"
	"github.com/rackstream/rackstream/codec"
	"github.com/rackstream/rackstream/partition"
	"github.com/rackstream/rackstream/tags"
)

// The test doubles below stand in for the Reader (the runtime, adapted):
// they hold a placement and in-memory replicas, so that the HTTP layer can
// be tested alone. Multi-instance tests through the real runtime live
// elsewhere.

type fakeReplica struct {
	mu     sync.Mutex
	status ReplicaStatus
	data   map[string][]byte
	keys   []string    // sorted
	err    error       // when set, reads fail with it
	isos   []Isolation // the isolation of every read, in order
	wins   []StoredWindow
}

// isolations returns the isolation of every read so far.
func (r *fakeReplica) isolations() []Isolation {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.isos)
}

func (r *fakeReplica) Status() ReplicaStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.status
}

func (r *fakeReplica) set(f func(*ReplicaStatus)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f(&r.status)
}

// put writes key=value as the next changelog record.
func (r *fakeReplica) put(key string, value []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.data[key]; !ok {
		i, _ := slices.BinarySearch(r.keys, key)
		r.keys = slices.Insert(r.keys, i, key)
	}
	r.data[key] = value
	r.status.Position++
}

func (r *fakeReplica) Get(key []byte, iso Isolation) ([]byte, bool, int64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.isos = append(r.isos, iso)
	if r.err != nil {
		return nil, false, 0, r.err
	}
	v, ok := r.data[string(key)]
	return v, ok, r.status.Position, nil
}

// Scan reads the keys in [start, end) under the replica's lock: a
// consistent snapshot, as LevelDB's iterator gives.
func (r *fakeReplica) Scan(start, end []byte, iso Isolation, fn func(k, v []byte) bool) (int64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.isos = append(r.isos, iso)
	if r.err != nil {
		return 0, r.err
	}
	i, _ := slices.BinarySearch(r.keys, string(start))
	for _, k := range r.keys[i:] {
		if end != nil && k >= string(end) || !fn([]byte(k), r.data[k]) {
			break
		}
	}
	return r.status.Position, nil
}

type fakeReader struct {
	self    string
	mu      sync.Mutex
	p       *balancer.Placement
	reps    map[string]map[int32]*fakeReplica
	globals map[string]*fakeReplica
	err     error
}

func (f *fakeReader) Global(store string) ReplicaView {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r := f.globals[store]; r != nil {
		return r
	}
	return nil
}

func (f *fakeReader) Self() string { return f.self }

func (f *fakeReader) Placement() *balancer.Placement {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.p
}

func (f *fakeReader) Replica(store string, task int32) ReplicaView {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r := f.reps[store][task]; r != nil {
		return r
	}
	return nil
}

func (f *fakeReader) Replicas() []ReplicaStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []ReplicaStatus
	for _, ts := range f.reps {
		for _, r := range ts {
			out = append(out, r.Status())
		}
	}
	return out
}

func (f *fakeReader) Ready() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

func (f *fakeReader) replica(store string, task int32) *fakeReplica {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reps[store][task]
}

// Stores of the test cluster: one per codec family.
const (
	storeCounts = "counts" // int64, decimal
	storeDocs   = "docs"   // JSON
	storeNames  = "names"  // strings
	storeRaw    = "raw"    // bytes
	storeWins   = "wins"   // a window store of int64 (windows_test.go)
	storeJoin   = "joined" // a join's store: left strings, right int64 (joins_test.go)
)

func testStores() []ServedStore {
	return []ServedStore{
		{Name: storeCounts, Render: func(b []byte) (any, error) { return codec.Int64().Decode(b) }},
		{Name: storeDocs, Render: func(b []byte) (any, error) { return codec.JSON[any]().Decode(b) }},
		{Name: storeNames, Render: func(b []byte) (any, error) { return codec.String().Decode(b) }},
		{Name: storeRaw, Render: func(b []byte) (any, error) { return codec.Bytes().Decode(b) }},
		{Name: storeWins, Render: func(b []byte) (any, error) { return codec.Int64().Decode(b) }, Windowed: true},
		{Name: storeJoin, Windowed: true, Join: true, RenderSide: func(side string, b []byte) (any, error) {
			if side == "left" {
				return codec.String().Decode(b)
			}
			return codec.Int64().Decode(b)
		}},
	}
}

type node struct {
	id  string
	rt  *fakeReader
	srv *Server
	reg *prometheus.Registry
	url string
	ln  net.Listener
	// done is closed when Serve returns.
	done chan struct{}
}

// cluster is a set of query servers on loopback sharing one placement:
// task i is active on member i%n and standby on member (i+1)%n.
type cluster struct {
	t      *testing.T
	nodes  []*node
	p      *balancer.Placement
	tasks  int
	scheme string
	client *http.Client
	token  string
}

type clusterOpts struct {
	members int
	tasks   int
	token   string
	// tls returns the server and peer configs of member i (nil: HTTP).
	tls    func(i int) (server, peer *tls.Config)
	client *tls.Config
	tweak  func(i int, o *Options)
}

func newCluster(t testing.TB, co clusterOpts) *cluster {
	t.Helper()
	if co.members == 0 {
		co.members = 3
	}
	if co.tasks == 0 {
		co.tasks = 6
	}
	c := &cluster{tasks: co.tasks, scheme: "http", token: co.token}
	if tt, ok := t.(*testing.T); ok {
		c.t = tt
	}
	p := &balancer.Placement{Generation: 7, Quality: testQuality()}
	for i := range co.members {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		id := fmt.Sprintf("n%d", i+1)
		c.nodes = append(c.nodes, &node{id: id, ln: ln, done: make(chan struct{})})
		p.Members = append(p.Members, balancer.Member{ProcessID: id, Endpoint: ln.Addr().String(),
			Tags: tags.MustSet("zone", fmt.Sprintf("z%d", i%3+1)), Capacity: 1})
	}
	for task := range co.tasks {
		p.Tasks = append(p.Tasks, balancer.Replicas{Active: task % co.members, Standbys: []int{(task + 1) % co.members}})
	}
	c.p = p
	for i, n := range c.nodes {
		n.reg = prometheus.NewRegistry()
		n.rt = &fakeReader{self: n.id, p: p, reps: map[string]map[int32]*fakeReplica{}}
		for _, st := range testStores() {
			n.rt.reps[st.Name] = map[int32]*fakeReplica{}
			for task, r := range p.Tasks {
				role := ReplicaRole("")
				switch {
				case r.Active == i:
					role = RoleActive
				case slices.Contains(r.Standbys, i):
					role = RoleStandby
				default:
					continue
				}
				n.rt.reps[st.Name][int32(task)] = &fakeReplica{
					status: ReplicaStatus{Store: st.Name, Task: int32(task), Role: role, Lag: 0},
					data:   map[string][]byte{},
				}
			}
		}
		opts := DefaultOptions()
		opts.Reader, opts.Stores, opts.Registerer, opts.Gatherer = n.rt, testStores(), n.reg, n.reg
		opts.AuthToken, opts.Logger = co.token, discardLogger()
		if co.tls != nil {
			opts.TLS, opts.PeerTLS = co.tls(i)
			if opts.TLS != nil {
				c.scheme = "https"
			}
		}
		if co.tweak != nil {
			co.tweak(i, &opts)
		}
		srv, err := New(opts)
		if err != nil {
			t.Fatal(err)
		}
		n.srv = srv
		n.url = c.scheme + "://" + n.ln.Addr().String()
		go func() {
			defer close(n.done)
			srv.Serve(n.ln)
		}()
		t.Cleanup(func() { n.stop() })
	}
	tr := &http.Transport{TLSClientConfig: co.client, MaxIdleConnsPerHost: 64}
	c.client = &http.Client{Transport: tr, Timeout: 30 * time.Second}
	t.Cleanup(tr.CloseIdleConnections)
	return c
}

// stop shuts the node's server down: its peers can no longer reach it.
func (n *node) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	n.srv.Shutdown(ctx)
	<-n.done
}

func testQuality() assignor.Quality {
	return assignor.Quality{Dimensions: []assignor.DimensionQuality{{Tag: "zone", Values: 3}}}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// task returns the task of key.
func (c *cluster) task(key []byte) int32 {
	return partition.Murmur2().Partition(key, int32(c.tasks))
}

// put writes key=value to every replica of key's task, at position pos.
func (c *cluster) put(store string, key, value []byte) {
	task := c.task(key)
	for _, n := range c.nodes {
		if r := n.rt.replica(store, task); r != nil {
			r.put(string(key), value)
		}
	}
}

// owner and standby return the nodes holding key's task in each role.
func (c *cluster) owner(key []byte) *node { return c.nodes[c.p.Tasks[c.task(key)].Active] }
func (c *cluster) standby(key []byte) *node {
	return c.nodes[c.p.Tasks[c.task(key)].Standbys[0]]
}

// other returns a node that holds no replica of key's task.
func (c *cluster) other(key []byte) *node {
	r := c.p.Tasks[c.task(key)]
	for i, n := range c.nodes {
		if i != r.Active && !slices.Contains(r.Standbys, i) {
			return n
		}
	}
	c.t.Fatalf("every node holds task %d", c.task(key))
	return nil
}

type answer struct {
	code   int
	header http.Header
	body   []byte
	json   map[string]any
}

func (a answer) errMsg() string {
	s, _ := a.json["error"].(string)
	return s
}

func (a answer) String() string { return fmt.Sprintf("%d %s", a.code, bytes.TrimSpace(a.body)) }

// get sends GET url+path with the cluster's token.
func (c *cluster) get(n *node, path string) answer {
	c.t.Helper()
	return c.do(n, path, func(r *http.Request) {
		if c.token != "" {
			r.Header.Set("Authorization", "Bearer "+c.token)
		}
	})
}

func (c *cluster) do(n *node, path string, prep func(*http.Request)) answer {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodGet, n.url+path, nil)
	if err != nil {
		c.t.Fatal(err)
	}
	if prep != nil {
		prep(req)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		c.t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	a := answer{code: resp.StatusCode, header: resp.Header, body: body}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(body, &a.json); err != nil {
			c.t.Fatalf("GET %s: answer is not JSON: %v: %s", path, err, body)
		}
	}
	return a
}

// keysForTasks returns keys k<i> until every task has at least per keys.
func keysPerTask(tasks, per int) [][]byte {
	count := make([]int, tasks)
	var out [][]byte
	for i := 0; ; i++ {
		k := []byte(fmt.Sprintf("k%04d", i))
		t := partition.Murmur2().Partition(k, int32(tasks))
		if count[t] < per {
			count[t]++
			out = append(out, k)
		}
		if !slices.ContainsFunc(count, func(c int) bool { return c < per }) {
			return out
		}
		if i > 1e6 {
			panic(errors.New("keysPerTask: no luck"))
		}
	}
}
