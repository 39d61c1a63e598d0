package client

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rackstream/rackstream/assignor"
	"github.com/rackstream/rackstream/partition"
)

// maxBody bounds an answer read from an instance.
const maxBody = 64 << 20

// Client queries a Rackstream cluster. It is safe for concurrent use.
type Client struct {
	opts   Options
	maxLag int64 // Options.MaxLag as sent: -1 for actives only
	hc     *http.Client
	scheme string
	next   atomic.Uint32 // round-robin start for scans

	// refreshMu serialises placement refreshes, so that many requests
	// finding the placement stale cause one /v1/metadata round.
	refreshMu sync.Mutex
	// mu guards pl, stale and down.
	mu    sync.Mutex
	pl    *placement
	stale bool
	// down holds endpoints that gave no answer lately, with when: they are
	// asked after the other candidates until downFor has passed, so that a
	// dead active costs one connect timeout, not one per request.
	down map[string]time.Time
}

// downFor is how long an endpoint that gave no answer is asked last.
const downFor = 10 * time.Second

// New returns a client of the cluster reachable at o.Endpoints. It
// contacts no instance until the first request.
func New(o Options) (*Client, error) {
	if len(o.Endpoints) == 0 {
		return nil, errors.New("rackstream client: no endpoints: set Options.Endpoints (host:port, ...)")
	}
	for _, e := range o.Endpoints {
		if _, _, err := net.SplitHostPort(e); err != nil {
			return nil, fmt.Errorf("rackstream client: endpoint %q: want host:port: %w", e, err)
		}
	}
	if o.RequestTimeout < 0 {
		return nil, fmt.Errorf("rackstream client: RequestTimeout %v: must be at least 0 (0 is 5s)", o.RequestTimeout)
	}
	if o.MaxLag < Zero {
		return nil, fmt.Errorf("rackstream client: MaxLag %d: must be at least 0 (actives only), or Zero for caught-up standbys", o.MaxLag)
	}
	if o.RequestTimeout == 0 {
		o.RequestTimeout = 5 * time.Second
	}
	o.Endpoints = slices.Clone(o.Endpoints)
	cl := &Client{opts: o, maxLag: standbyLag(o.MaxLag), scheme: "http", down: map[string]time.Time{}}
	rt := o.Transport
	if rt == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.ResponseHeaderTimeout = o.RequestTimeout
		if o.TLSConfig != nil || o.RootCAs != nil {
			tc := &tls.Config{MinVersion: tls.VersionTLS12}
			if o.TLSConfig != nil {
				tc = o.TLSConfig.Clone()
			}
			if o.RootCAs != nil {
				tc.RootCAs = o.RootCAs
			}
			tr.TLSClientConfig = tc
		}
		rt = tr
	}
	if o.TLSConfig != nil || o.RootCAs != nil {
		cl.scheme = "https"
	}
	cl.hc = &http.Client{Transport: rt, Timeout: o.RequestTimeout,
		// An instance never redirects; following one could leak the token.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return cl, nil
}

// Close releases idle connections.
func (c *Client) Close() { c.hc.CloseIdleConnections() }

// Value is a key's value as one replica answered it.
type Value struct {
	Key []byte
	// Raw is the value as JSON, rendered by the store's codec.
	Raw json.RawMessage
	// Task is the key's task (partition slot).
	Task int32
	// ServedBy is the process id of the instance that answered, Role its
	// role for the task ("active" or "standby") and Lag its lag in
	// changelog records (0 for an active).
	ServedBy string
	Role     string
	Lag      int64
	// Position is the replica's checkpoint of the task's changelog: pass
	// it to MinPosition to never read an older state.
	Position   int64
	Generation int32
}

// Decode unmarshals the value's JSON into dst.
func (v *Value) Decode(dst any) error { return json.Unmarshal(v.Raw, dst) }

type keyAnswer struct {
	Value json.RawMessage `json:"value"`
	answerMeta
}

func (a *keyAnswer) meta() *answerMeta { return &a.answerMeta }

// answerMeta is what a lookup's answer says of the replica that answered.
type answerMeta struct {
	Task       int32  `json:"task"`
	ServedBy   string `json:"served_by"`
	Role       string `json:"role"`
	Lag        int64  `json:"lag"`
	Position   int64  `json:"position"`
	Generation int32  `json:"generation"`
}

// Get reads key from store, asking the key's active directly, and, when
// standbys may answer (MaxLag, ReadMaxLag), its standbys after it.
func (c *Client) Get(ctx context.Context, store string, key []byte, opts ...ReadOpt) (*Value, error) {
	var a keyAnswer
	if err := c.lookup(ctx, store, "keys", key, nil, opts, &a); err != nil {
		return nil, err
	}
	return &Value{Key: key, Raw: a.Value, Task: a.Task, ServedBy: a.ServedBy, Role: a.Role, Lag: a.Lag,
		Position: a.Position, Generation: a.Generation}, nil
}

// lookup reads key under /v1/stores/{store}/{kind}/ with the query extra
// and decodes the answer into ans, whose embedded keyAnswer fields say who
// answered.
func (c *Client) lookup(ctx context.Context, store, kind string, key []byte, extra url.Values, opts []ReadOpt, ans interface{ meta() *answerMeta }) error {
	rc := c.readConfig(opts)
	path := "/v1/stores/" + url.PathEscape(store) + "/" + kind + "/" + base64.RawURLEncoding.EncodeToString(key)
	q := url.Values{"key_encoding": {"base64url"}}
	for k, v := range extra {
		q[k] = v
	}
	if rc.maxLag >= 0 {
		q.Set("max_lag", strconv.FormatInt(rc.maxLag, 10))
	}
	if rc.minPosition >= 0 {
		q.Set("min_position", strconv.FormatInt(rc.minPosition, 10))
	}
	var errs []error
	for attempt := range 2 {
		p, err := c.placement(ctx, attempt > 0)
		if err != nil {
			return errors.Join(append(errs, err)...)
		}
		task := p.part.Partition(key, int32(len(p.tasks)))
		cands := p.candidates(task, rc.maxLag >= 0)
		if len(cands) == 0 {
			errs = append(errs, fmt.Errorf("rackstream client: get %s/%q: task %d has no active instance at generation %d (it is moving; MaxLag lets a standby answer)", store, key, task, p.generation))
		}
		in, body, err := c.tryEach(ctx, cands, path, q, &errs)
		if err != nil {
			return err
		}
		if body == nil {
			continue
		}
		if err := json.Unmarshal(body, ans); err != nil {
			return &Error{Instance: in.id, Endpoint: in.endpoint, Request: "GET " + path, Status: http.StatusOK,
				Message: "answer does not decode", Err: err}
		}
		if m := ans.meta(); m.Generation != p.generation || m.ServedBy != in.id {
			c.markStale(p) // a rebalance, or the instance forwarded
		}
		return nil
	}
	return errors.Join(errs...)
}

// tryEach asks the instances in turn for GET path?q. It returns the first
// 200 answer's instance and body; a final error when an answer is one no
// other replica would change (400, 401, 404) or ctx is done; or a nil body
// when every instance failed in a way another might not, each failure
// appended to errs.
func (c *Client) tryEach(ctx context.Context, ins []instance, path string, q url.Values, errs *[]error) (instance, []byte, error) {
	for _, in := range c.upFirst(ins) {
		code, body, err := c.do(ctx, in, path, q)
		if err != nil {
			c.markDown(in.endpoint)
			*errs = append(*errs, err)
			if ctx.Err() != nil {
				return in, nil, errors.Join(*errs...)
			}
			continue
		}
		c.markUp(in.endpoint)
		if code == http.StatusOK {
			return in, body, nil
		}
		e := c.answerError(in, "GET "+path+"?"+q.Encode(), code, body)
		if !e.retryable() {
			return in, nil, e
		}
		*errs = append(*errs, e)
	}
	return instance{}, nil, nil
}

func (c *Client) readConfig(opts []ReadOpt) readConfig {
	rc := readConfig{maxLag: c.maxLag, minPosition: -1}
	for _, o := range opts {
		o.applyRead(&rc)
	}
	return rc
}

// instance is one endpoint to ask, with its process id when known.
type instance struct {
	id       string
	endpoint string
}

// do sends GET path?q to in and returns the answer's status and body, or
// an *Error when no answer came.
func (c *Client) do(ctx context.Context, in instance, path string, q url.Values) (int, []byte, error) {
	u := c.scheme + "://" + in.endpoint + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	fail := func(err error) (int, []byte, error) {
		return 0, nil, &Error{Instance: in.id, Endpoint: in.endpoint, Request: "GET " + path, Err: err}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fail(err)
	}
	if c.opts.AuthToken != "" {
		req.Header.Set("Authorization", "Bearer "+c.opts.AuthToken)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is in the Error already
		}
		return fail(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return fail(fmt.Errorf("read answer: %w", err))
	}
	if len(body) > maxBody {
		return fail(fmt.Errorf("answer larger than %d bytes", maxBody))
	}
	return resp.StatusCode, body, nil
}

func (c *Client) answerError(in instance, request string, code int, body []byte) *Error {
	e := &Error{Instance: in.id, Endpoint: in.endpoint, Request: request, Status: code}
	e.Code, e.Message, e.AnsweredBy = decodeError(body)
	return e
}

// upFirst returns ins with the endpoints that gave no answer within
// downFor moved to the end, the order otherwise kept.
func (c *Client) upFirst(ins []instance) []instance {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.down) == 0 {
		return ins
	}
	now := time.Now()
	var up, down []instance
	for _, in := range ins {
		if at, ok := c.down[in.endpoint]; ok && now.Sub(at) < downFor {
			down = append(down, in)
		} else {
			up = append(up, in)
		}
	}
	return append(up, down...)
}

func (c *Client) markDown(endpoint string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.down[endpoint] = time.Now()
}

func (c *Client) markUp(endpoint string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.down, endpoint)
}

// placement returns the cached placement, reading /v1/metadata first when
// there is none, it is stale, or force is set.
func (c *Client) placement(ctx context.Context, force bool) (*placement, error) {
	c.mu.Lock()
	p, stale := c.pl, c.stale
	c.mu.Unlock()
	if p != nil && !stale && !force {
		return p, nil
	}
	c.refreshMu.Lock()
	defer c.refreshMu.Unlock()
	c.mu.Lock()
	if c.pl != p && !c.stale { // another request refreshed it meanwhile
		p = c.pl
		c.mu.Unlock()
		return p, nil
	}
	c.mu.Unlock()
	np, err := c.fetchPlacement(ctx, p)
	if err != nil {
		if p != nil {
			return p, nil // keep routing with what we know
		}
		return nil, err
	}
	c.mu.Lock()
	c.pl, c.stale = np, false
	c.mu.Unlock()
	return np, nil
}

// markStale makes the next request refresh the placement, unless it was
// refreshed since p.
func (c *Client) markStale(p *placement) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pl == p {
		c.stale = true
	}
}

// Generation returns the generation of the placement the client routes
// with, -1 before the first request.
func (c *Client) Generation() int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pl == nil {
		return -1
	}
	return c.pl.generation
}

// Metadata reads the cluster's placement (GET /v1/metadata, whose one Go
// type is assignor.Metadata) from an instance now, and routes with it from
// then on.
func (c *Client) Metadata(ctx context.Context) (*assignor.Metadata, error) {
	p, err := c.placement(ctx, true)
	if err != nil {
		return nil, err
	}
	return p.md, nil
}

// endpoints returns who to ask for the placement: the instances of the
// current one, then the seeds not among them.
func (c *Client) endpoints(cur *placement) []instance {
	var out []instance
	seen := map[string]bool{}
	if cur != nil {
		for _, in := range cur.md.Clients {
			if in.Endpoint != "" && !seen[in.Endpoint] {
				seen[in.Endpoint] = true
				out = append(out, instance{id: in.ID, endpoint: in.Endpoint})
			}
		}
	}
	for _, e := range c.opts.Endpoints {
		if !seen[e] {
			seen[e] = true
			out = append(out, instance{endpoint: e})
		}
	}
	return out
}

// fetchPlacement asks the instances for /v1/metadata until one answers
// with a generation at least cur's.
func (c *Client) fetchPlacement(ctx context.Context, cur *placement) (*placement, error) {
	var errs []error
	var best *placement
	for _, in := range c.upFirst(c.endpoints(cur)) {
		code, body, err := c.do(ctx, in, "/v1/metadata", nil)
		if err != nil {
			c.markDown(in.endpoint)
			errs = append(errs, err)
			if ctx.Err() != nil {
				break
			}
			continue
		}
		c.markUp(in.endpoint)
		if code != http.StatusOK {
			e := c.answerError(in, "GET /v1/metadata", code, body)
			if code == http.StatusUnauthorized || code == http.StatusForbidden {
				return nil, e
			}
			errs = append(errs, e)
			continue
		}
		p, err := parsePlacement(body)
		if err != nil {
			errs = append(errs, &Error{Instance: in.id, Endpoint: in.endpoint, Request: "GET /v1/metadata", Status: code, Message: "placement does not decode", Err: err})
			continue
		}
		if cur == nil || p.generation >= cur.generation {
			return p, nil
		}
		if best == nil || p.generation > best.generation {
			best = p
		}
	}
	if best != nil {
		return best, nil
	}
	return nil, errors.Join(append([]error{errors.New("rackstream client: no instance answered /v1/metadata")}, errs...)...)
}

// placement is a /v1/metadata document (assignor.Metadata, the one type
// that defines it) made ready for routing.
type placement struct {
	md         *assignor.Metadata
	generation int32
	part       partition.Partitioner
	tasks      []assignor.TaskPlacement // by task
	endpoint   map[string]string        // process id -> endpoint
}

func parsePlacement(body []byte) (*placement, error) {
	var md assignor.Metadata
	if err := json.Unmarshal(body, &md); err != nil {
		return nil, err
	}
	part, err := partition.ByName(md.Partitioner)
	if err != nil {
		return nil, err
	}
	if len(md.Tasks) == 0 || md.Partitions != 0 && md.Partitions != len(md.Tasks) {
		return nil, fmt.Errorf("%d tasks for %d partitions", len(md.Tasks), md.Partitions)
	}
	p := &placement{md: &md, generation: md.Generation, part: part, tasks: make([]assignor.TaskPlacement, len(md.Tasks)),
		endpoint: make(map[string]string, len(md.Clients))}
	for _, t := range md.Tasks {
		if t.Task < 0 || int(t.Task) >= len(p.tasks) {
			return nil, fmt.Errorf("task %d out of range 0-%d", t.Task, len(p.tasks)-1)
		}
		p.tasks[t.Task] = t
	}
	for _, in := range md.Clients {
		p.endpoint[in.ID] = in.Endpoint
	}
	return p, nil
}

// candidates are who may answer for task, in order: its active, then (when
// standbys may answer) its standbys.
func (p *placement) candidates(task int32, standbys bool) []instance {
	t := p.tasks[task]
	var out []instance
	add := func(id string) {
		if e := p.endpoint[id]; id != "" && e != "" {
			out = append(out, instance{id: id, endpoint: e})
		}
	}
	add(t.Active)
	if standbys {
		for _, id := range t.Standby {
			add(id)
		}
	}
	return out
}

// instances returns every instance with an endpoint, rotated to start at
// the i-th, so that scans spread over the cluster.
func (p *placement) instances(i uint32) []instance {
	var out []instance
	for _, in := range p.md.Clients {
		if in.Endpoint != "" {
			out = append(out, instance{id: in.ID, endpoint: in.Endpoint})
		}
	}
	if len(out) > 0 {
		k := int(i % uint32(len(out)))
		out = append(out[k:], out[:k]...)
	}
	return slices.Clip(out)
}
