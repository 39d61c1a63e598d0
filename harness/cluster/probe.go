package cluster

import (
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// AvailabilityProbe queries keys over HTTP throughout a test, as clients behind a
// load balancer do, and measures how long each key could not be read.
//
// Each key is read by a client of its own (so that one read waiting on a
// frozen or cut instance delays no other key), every interval x keys, from
// the next running instance (round robin over all reads); a request that
// gets no HTTP answer within 2 s (the instance died, froze or was cut under
// the reader's feet) is retried once on the next instance, as a load
// balancer retries a failed connection on another backend. A read fails when no answer was
// 200. A key's unavailable window runs from its last successful read before
// a failure to its next successful read, so it includes up to one period of
// reads of slack.
type AvailabilityProbe struct {
	// MaxLag, when >= 0, is passed as max_lag: a standby that far behind
	// may answer.
	MaxLag int64

	g        *Group
	store    string
	route    string // "/keys/" or "/windows/"
	keys     []string
	interval time.Duration
	client   *http.Client

	stop chan struct{}
	wg   sync.WaitGroup // the keys' clients
	next atomic.Int64   // round-robin position over instances

	mu       sync.Mutex // guards the fields below
	reads    int
	failures int
	lastOK   map[string]time.Time // each key's last successful read
	failing  map[string]bool      // keys whose last read failed
	windows  []Window             // closed unavailable windows
	causes   map[string]int       // failed reads by cause ("503", "no answer")
}

// Window is a time in which Key could not be read: from its last
// successful read before failures to its next successful read.
type Window struct {
	Key      string
	From, To time.Time
}

// Len is the window's length.
func (w Window) Len() time.Duration { return w.To.Sub(w.From) }

// StartReader starts reading keys of store on g's running instances, one
// read every interval on average; maxLag < 0 reads actives only.
func StartReader(g *Group, store string, keys []string, maxLag int64, interval time.Duration) *AvailabilityProbe {
	return startReader(g, store, "/keys/", keys, maxLag, interval)
}

// StartWindowReader is StartReader for a window or session store: it reads
// each key's windows (GET /v1/stores/{store}/windows/{key}).
func StartWindowReader(g *Group, store string, keys []string, maxLag int64, interval time.Duration) *AvailabilityProbe {
	return startReader(g, store, "/windows/", keys, maxLag, interval)
}

func startReader(g *Group, store, route string, keys []string, maxLag int64, interval time.Duration) *AvailabilityProbe {
	r := &AvailabilityProbe{
		MaxLag: maxLag, g: g, store: store, route: route, keys: keys, interval: interval,
		client: &http.Client{Timeout: 2 * time.Second},
		stop:   make(chan struct{}),
		lastOK: map[string]time.Time{}, failing: map[string]bool{}, causes: map[string]int{},
	}
	g.t.Cleanup(func() { r.Stop() })
	period := interval * time.Duration(len(keys))
	for i, key := range keys {
		r.wg.Add(1)
		go r.read(key, period, interval*time.Duration(i))
	}
	return r
}

// read reads key every period, starting after offset (the keys' reads
// are staggered).
func (r *AvailabilityProbe) read(key string, period, offset time.Duration) {
	defer r.wg.Done()
	select {
	case <-r.stop:
		return
	case <-time.After(offset):
	}
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		cause := "no instance"
		// The retry goes to the instance after the first try's, never
		// the same one (the position is shared by every key's client).
		at := int(r.next.Add(1))
		for try := 0; try < 2; try++ {
			up := r.g.Up()
			if len(up) == 0 {
				break
			}
			in := up[(at+try)%len(up)]
			code, err := getJSON(r.client, in.URL()+r.path(key), nil)
			if err == nil {
				cause = strconv.Itoa(code)
				break // an HTTP answer: the instance's word on the key
			}
			cause = "no answer"
		}
		r.record(key, cause, time.Now())
		select {
		case <-r.stop:
			return
		case <-tick.C:
		}
	}
}

func (r *AvailabilityProbe) path(key string) string {
	p := "/v1/stores/" + url.PathEscape(r.store) + r.route + url.PathEscape(key)
	if r.MaxLag >= 0 {
		p += "?max_lag=" + strconv.FormatInt(r.MaxLag, 10)
	}
	return p
}

func (r *AvailabilityProbe) record(key, cause string, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reads++
	if cause != "200" {
		r.failures++
		r.causes[cause]++
		r.failing[key] = true
		return
	}
	if from, seen := r.lastOK[key]; r.failing[key] && seen {
		r.windows = append(r.windows, Window{Key: key, From: from, To: now})
	}
	r.failing[key] = false
	r.lastOK[key] = now
}

// AllReadSince reports whether every key has been read successfully after
// t.
func (r *AvailabilityProbe) AllReadSince(t time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, k := range r.keys {
		if !r.lastOK[k].After(t) {
			return false
		}
	}
	return true
}

// ProbeReport is what an AvailabilityProbe measured.
type ProbeReport struct {
	Reads, Failures int
	// Causes counts failed reads by cause: an HTTP status ("503"), "no
	// answer" (no instance answered at all) or "no instance".
	Causes map[string]int
	// Windows are the times in which a key could not be read, a key still
	// failing counting until the report.
	Windows []Window
	// Worst is the longest window (zero when none).
	Worst Window
}

// MaxUnavailable is the length of the longest window.
func (r ProbeReport) MaxUnavailable() time.Duration { return r.Worst.Len() }

// Report returns the figures so far.
func (r *AvailabilityProbe) Report() ProbeReport {
	r.mu.Lock()
	defer r.mu.Unlock()
	rep := ProbeReport{Reads: r.reads, Failures: r.failures, Causes: map[string]int{}, Windows: append([]Window(nil), r.windows...)}
	for c, n := range r.causes {
		rep.Causes[c] = n
	}
	now := time.Now()
	for k, f := range r.failing {
		if from, seen := r.lastOK[k]; f && seen {
			rep.Windows = append(rep.Windows, Window{Key: k, From: from, To: now})
		}
	}
	for _, w := range rep.Windows {
		if w.Len() > rep.Worst.Len() {
			rep.Worst = w
		}
	}
	return rep
}

// Excusing returns the longest part of any window that lies outside every
// excused interval (pairs of from, to: e.g. while the broker was down),
// for bounds that hold only while the excused cause is absent.
func (r ProbeReport) Excusing(excused ...[2]time.Time) Window {
	var worst Window
	for _, w := range r.Windows {
		parts := []Window{w}
		for _, ex := range excused {
			var next []Window
			for _, p := range parts {
				if !ex[0].Before(p.To) || !ex[1].After(p.From) { // no overlap
					next = append(next, p)
					continue
				}
				if p.From.Before(ex[0]) {
					next = append(next, Window{Key: p.Key, From: p.From, To: ex[0]})
				}
				if ex[1].Before(p.To) {
					next = append(next, Window{Key: p.Key, From: ex[1], To: p.To})
				}
			}
			parts = next
		}
		for _, p := range parts {
			if p.Len() > worst.Len() {
				worst = p
			}
		}
	}
	return worst
}

// Stop stops the reader and returns its report.
func (r *AvailabilityProbe) Stop() ProbeReport {
	select {
	case <-r.stop:
	default:
		close(r.stop)
	}
	r.wg.Wait()
	return r.Report()
}
