package cluster

import (
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"
)

// Reader queries keys over HTTP throughout a test, as a client behind a
// load balancer does, and measures how long each key could not be read.
//
// It reads the keys in turn, one read every Interval, each from the next
// running instance (round robin); a request that gets no HTTP answer at
// all (the instance died, froze or was cut under the reader's feet) is
// retried once on the next instance, as a load balancer retries a failed
// connection. A read fails when no answer was 200. A key's unavailable
// window runs from its last successful read before a failure to its next
// successful read, so it includes up to one round of reads of slack.
type Reader struct {
	// MaxLag, when >= 0, is passed as max_lag: a standby that far behind
	// may answer.
	MaxLag int64

	g        *Group
	store    string
	keys     []string
	interval time.Duration
	client   *http.Client

	stop chan struct{}
	done chan struct{}

	mu       sync.Mutex // guards the fields below
	reads    int
	failures int
	lastOK   map[string]time.Time // each key's last successful read
	failing  map[string]bool      // keys whose last read failed
	worst    time.Duration
	worstKey string
	worstAt  time.Time // when the worst window ended
}

// StartReader starts reading keys of store on g's running instances, one
// read every interval; maxLag < 0 reads actives only.
func StartReader(g *Group, store string, keys []string, maxLag int64, interval time.Duration) *Reader {
	r := &Reader{
		MaxLag: maxLag, g: g, store: store, keys: keys, interval: interval,
		client: &http.Client{Timeout: 2 * time.Second},
		stop:   make(chan struct{}), done: make(chan struct{}),
		lastOK: map[string]time.Time{}, failing: map[string]bool{},
	}
	g.t.Cleanup(func() { r.Stop() })
	go r.loop()
	return r
}

func (r *Reader) loop() {
	defer close(r.done)
	tick := time.NewTicker(r.interval)
	defer tick.Stop()
	next := 0 // round-robin position over instances
	for i := 0; ; i++ {
		select {
		case <-r.stop:
			return
		case <-tick.C:
		}
		key := r.keys[i%len(r.keys)]
		ok := false
		for try := 0; try < 2 && !ok; try++ {
			up := r.g.Up()
			if len(up) == 0 {
				break
			}
			in := up[next%len(up)]
			next++
			code, err := getJSON(r.client, in.URL()+r.path(key), nil)
			ok = err == nil && code == 200
			if err == nil {
				break // an HTTP answer: the instance's word on the key
			}
		}
		r.record(key, ok, time.Now())
	}
}

func (r *Reader) path(key string) string {
	p := "/v1/stores/" + url.PathEscape(r.store) + "/keys/" + url.PathEscape(key)
	if r.MaxLag >= 0 {
		p += "?max_lag=" + strconv.FormatInt(r.MaxLag, 10)
	}
	return p
}

func (r *Reader) record(key string, ok bool, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reads++
	if !ok {
		r.failures++
		r.failing[key] = true
		return
	}
	if r.failing[key] {
		r.window(key, now)
	}
	r.failing[key] = false
	r.lastOK[key] = now
}

// window closes key's unavailable window at now.
func (r *Reader) window(key string, now time.Time) {
	from, seen := r.lastOK[key]
	if !seen {
		return // never read yet: not a loss of availability
	}
	if w := now.Sub(from); w > r.worst {
		r.worst, r.worstKey, r.worstAt = w, key, now
	}
}

// AllReadSince reports whether every key has been read successfully after
// t.
func (r *Reader) AllReadSince(t time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, k := range r.keys {
		if !r.lastOK[k].After(t) {
			return false
		}
	}
	return true
}

// ReaderReport is what a Reader measured.
type ReaderReport struct {
	Reads, Failures int
	// MaxUnavailable is the longest window in which one key could not be
	// read, Key that key and Until when the window ended.
	MaxUnavailable time.Duration
	Key            string
	Until          time.Time
}

// Report returns the figures so far; a key failing now counts as
// unavailable until now.
func (r *Reader) Report() ReaderReport {
	r.mu.Lock()
	defer r.mu.Unlock()
	worst, key, at := r.worst, r.worstKey, r.worstAt
	now := time.Now()
	for k, f := range r.failing {
		if from, seen := r.lastOK[k]; f && seen && now.Sub(from) > worst {
			worst, key, at = now.Sub(from), k, now
		}
	}
	return ReaderReport{Reads: r.reads, Failures: r.failures, MaxUnavailable: worst, Key: key, Until: at}
}

// Reset forgets the figures (keeping each key's last successful read), to
// measure one phase of a test.
func (r *Reader) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reads, r.failures, r.worst, r.worstKey, r.worstAt = 0, 0, 0, "", time.Time{}
}

// Stop stops the reader and returns its report.
func (r *Reader) Stop() ReaderReport {
	select {
	case <-r.stop:
	default:
		close(r.stop)
	}
	<-r.done
	return r.Report()
}
