package cluster

import (
	"encoding/json"
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
//
// Each key's client also checks that the key never reads backwards: it
// reads the committed view (isolation=committed), passes back the
// position of its last answer as min_position, and compares each answer's
// value, a sequence number or a count, with the largest it has seen. A
// 409 (every replica that could answer is behind min_position) counts as
// a failed read, retried on the next instance like no answer.
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
	strict   bool                 // every decrease is backwards (SetStrict)
	order    map[string]*keyOrder // each key's largest value and last position
	backward []Backwards          // answers that read backwards
	replayed int                  // decreases at a later position (Strict off)
}

// keyOrder is what a key's client has seen: its largest value, the
// position that answered it, and the position of its last answer.
type keyOrder struct {
	max, maxAt, last int64
	seen             bool
}

// Backwards is an answer that broke the order of a key's reads: a value
// below one seen before, or a position below the min_position it was
// asked for.
type Backwards struct {
	Key                   string
	At                    time.Time
	Value, Max            int64 // the answer's value and the largest seen before
	Position, MinPosition int64 // the answer's position and the one asked for
	ServedBy, Role        string
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
		order: map[string]*keyOrder{},
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
		var ans answer
		minPos := r.minPosition(key)
		// The retry goes to the instance after the first try's, never
		// the same one (the position is shared by every key's client).
		at := int(r.next.Add(1))
		for try := 0; try < 2; try++ {
			up := r.g.Up()
			if len(up) == 0 {
				break
			}
			in := up[(at+try)%len(up)]
			ans = answer{}
			code, err := getJSON(r.client, in.URL()+r.path(key, minPos), &ans)
			if err == nil && code != 409 {
				cause = strconv.Itoa(code)
				break // an HTTP answer: the instance's word on the key
			}
			cause = "no answer"
			if err == nil {
				cause = "409" // this replica is behind: another may not be
			}
		}
		r.record(key, cause, time.Now())
		if cause == "200" {
			r.check(key, minPos, ans, time.Now())
		}
		select {
		case <-r.stop:
			return
		case <-tick.C:
		}
	}
}

// answer is the part of a key lookup's answer the probe checks.
type answer struct {
	Value    json.RawMessage `json:"value"`
	Position *int64          `json:"position"`
	ServedBy string          `json:"served_by"`
	Role     string          `json:"role"`
}

func (r *AvailabilityProbe) path(key string, minPos int64) string {
	p := "/v1/stores/" + url.PathEscape(r.store) + r.route + url.PathEscape(key) + "?isolation=committed"
	if r.MaxLag >= 0 {
		p += "&max_lag=" + strconv.FormatInt(r.MaxLag, 10)
	}
	if minPos > 0 {
		p += "&min_position=" + strconv.FormatInt(minPos, 10)
	}
	return p
}

// SetStrict makes every decrease of a key's value count as backwards, as
// under exactly-once. Otherwise (at-least-once) a decrease answered at a
// later position than the key's largest value is records processed again
// after a failure, counted apart as replayed.
func (r *AvailabilityProbe) SetStrict(strict bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.strict = strict
}

// minPosition is the position of key's last answer, 0 before the first.
func (r *AvailabilityProbe) minPosition(key string) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if o := r.order[key]; o != nil {
		return o.last
	}
	return 0
}

// check compares an answer of key, asked with min_position minPos, with
// the key's earlier answers.
func (r *AvailabilityProbe) check(key string, minPos int64, ans answer, now time.Time) {
	if ans.Position == nil {
		return // no position: an answer of an earlier build
	}
	pos := *ans.Position
	v, isNumber := sequenceValue(ans.Value)
	r.mu.Lock()
	defer r.mu.Unlock()
	o := r.order[key]
	if o == nil {
		o = &keyOrder{}
		r.order[key] = o
	}
	o.last = max(o.last, pos)
	b := Backwards{Key: key, At: now, Value: v, Max: o.max, Position: pos, MinPosition: minPos, ServedBy: ans.ServedBy, Role: ans.Role}
	switch {
	case pos < minPos:
		r.backward = append(r.backward, b)
		return
	case !isNumber:
		return // nothing to order the value by
	case o.seen && v < o.max && !r.strict && pos > o.maxAt:
		r.replayed++
	case o.seen && v < o.max:
		r.backward = append(r.backward, b)
	}
	if !o.seen || v >= o.max {
		o.max, o.maxAt, o.seen = v, pos, true
	}
}

// sequenceValue reads a stored value that is a sequence number or a count:
// a JSON number or a string holding a decimal integer.
func sequenceValue(raw json.RawMessage) (int64, bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		n, err := strconv.ParseInt(s, 10, 64)
		return n, err == nil
	}
	var n int64
	return n, json.Unmarshal(raw, &n) == nil
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
	// Backwards are the answers that read backwards (want none).
	Backwards []Backwards
	// Replayed counts decreases answered at a later position than the
	// key's largest value (not strict): records processed again.
	Replayed int
}

// MaxUnavailable is the length of the longest window.
func (r ProbeReport) MaxUnavailable() time.Duration { return r.Worst.Len() }

// Report returns the figures so far.
func (r *AvailabilityProbe) Report() ProbeReport {
	r.mu.Lock()
	defer r.mu.Unlock()
	rep := ProbeReport{
		Reads: r.reads, Failures: r.failures, Causes: map[string]int{}, Windows: append([]Window(nil), r.windows...),
		Backwards: append([]Backwards(nil), r.backward...), Replayed: r.replayed,
	}
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
