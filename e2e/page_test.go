package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/rackstream/rackstream/assignor"
	"github.com/rackstream/rackstream/harness/cluster"
	"github.com/rackstream/rackstream/harness/kafkatest"
	"github.com/rackstream/rackstream/query/page"
)

var update = flag.Bool("update", false, "rewrite the placement page's screenshots under docs/ (TestPlacementPageInChromium)")

// TestPlacementPageInChromium opens the placement page in headless
// Chromium: a synthetic 200 x 30 placement with hostile ids and tags, the
// token prompt, and a live `rackstream dev` group through a kill, its
// what-if compared with `rackstream assign --lose` on the same metadata.
func TestPlacementPageInChromium(t *testing.T) {
	b := newBrowser(t)
	for _, sub := range []struct {
		name string
		test func(*testing.T, *browser)
	}{
		{"synthetic 200x30", testSyntheticPage},
		{"token", testPageToken},
		{"dev", testDevPage},
	} {
		t.Run(sub.name, func(t *testing.T) {
			b := b.on(t)
			// Leave the page before the subtest's servers close: a page
			// left polling them would log failed loads into the next.
			defer b.do("leave the page", chromedp.Navigate("about:blank"))
			sub.test(t, b)
		})
	}
}

// Hostile names a member could announce: they must show as text.
const (
	hostileTag = "<script>window.pw=1</script>"
	hostileID  = "<img src=x onerror=pw=2>"
	markupID   = "<i>node-07</i>"
)

// syntheticEndpoint is the endpoint of the client id of syntheticMetadata.
func syntheticEndpoint(id string) string {
	i := -1
	switch id {
	case hostileID:
		i = 4
	case markupID:
		i = 7
	default:
		fmt.Sscanf(id, "node-%d", &i)
	}
	return fmt.Sprintf("127.0.0.1:%d", 20000+i)
}

// syntheticMetadata is a /v1/metadata document of tasks tasks on n
// instances in three zones and two clusters, two standbys per task, with
// hostile names, a restoring active, a warmup and an instance not ready.
func syntheticMetadata(tasks, n int) []byte {
	type client struct {
		ID       string            `json:"id"`
		Endpoint string            `json:"endpoint"`
		Tags     map[string]string `json:"tags"`
		Capacity int               `json:"capacity"`
		Active   []int             `json:"active"`
		Standby  []int             `json:"standby"`
		Warmup   []int             `json:"warmup"`
	}
	type lag struct {
		Task   int    `json:"task"`
		Client string `json:"client"`
		Role   string `json:"role"`
		Lag    int64  `json:"lag"`
	}
	type status struct {
		ID     string `json:"id"`
		Ready  bool   `json:"ready"`
		Reason string `json:"reason,omitempty"`
	}
	zones := []string{"eu-west-1a", "eu-west-1b", "eu-west-1c"}
	clients := make([]client, n)
	var sts []status
	for i := range clients {
		id := fmt.Sprintf("node-%02d", i)
		switch i {
		case 4:
			id = hostileID
		case 7:
			id = markupID
		}
		cluster := "k8s-" + strconv.Itoa(1+(i/3)%2)
		if i == 5 {
			cluster = hostileTag
		}
		clients[i] = client{ID: id, Endpoint: syntheticEndpoint(id), Capacity: 1,
			Tags: map[string]string{"zone": zones[i%3], "cluster": cluster}, Active: []int{}, Standby: []int{}, Warmup: []int{}}
		st := status{ID: id, Ready: true}
		if i == 9 {
			st = status{ID: id, Reason: "restoring 1 active task <b>from</b> the changelog"}
		}
		sts = append(sts, st)
	}
	var ts []assignor.TaskPlacement
	var lags []lag
	for t := range tasks {
		a, s1, s2 := t%n, (t+1)%n, (t+2)%n
		tp := assignor.TaskPlacement{Task: t, Active: clients[a].ID, Standby: []string{clients[s1].ID, clients[s2].ID}, Warmup: []string{}}
		slices.Sort(tp.Standby)
		clients[a].Active = append(clients[a].Active, t)
		clients[s1].Standby = append(clients[s1].Standby, t)
		clients[s2].Standby = append(clients[s2].Standby, t)
		lags = append(lags, lag{t, clients[s1].ID, "standby", int64(t * 7 % 50)}, lag{t, clients[s2].ID, "standby", int64(t * 3 % 20)})
		if t == 9 {
			lags = append(lags, lag{t, clients[a].ID, "active", 1234})
		}
		if t == 11 {
			w := (t + 5) % n
			tp.Warmup = []string{clients[w].ID}
			clients[w].Warmup = append(clients[w].Warmup, t)
			lags = append(lags, lag{t, clients[w].ID, "warmup", 340})
		}
		ts = append(ts, tp)
	}
	doc := map[string]any{
		"generation": 42, "self": "node-00", "partitioner": "murmur2", "partitions": tasks,
		"clients": clients, "tasks": ts, "probing_rebalance_needed": true,
		"quality": map[string]any{
			"dimensions":        []map[string]any{{"tag": "zone", "values": 3, "tasks_repeating": 0}, {"tag": "cluster", "values": 3, "tasks_repeating": 12}},
			"standby_shortfall": 0, "active_load": map[string]float64{"min": 6, "max": 7}, "replica_load": map[string]float64{"min": 20, "max": 20},
			"exposure": []map[string]any{{"tag": "cluster", "value": hostileTag, "tasks_without_replica": []int{}}},
		},
		"status": map[string]any{"as_of": time.Now().UTC().Format(time.RFC3339Nano), "clients": sts, "lags": lags},
	}
	b, err := json.Marshal(doc)
	if err != nil {
		panic(err)
	}
	return b
}

// metadataServer serves the page in front of a stand-in query server that
// answers /v1/metadata with doc (behind token, when set) and records the
// requests that reach it.
type metadataServer struct {
	*httptest.Server
	doc   []byte
	token string

	mu   sync.Mutex
	seen []string // "METHOD URI Authorization" of every request; guarded by mu
}

func newMetadataServer(t *testing.T, doc []byte, token string) *metadataServer {
	s := &metadataServer{doc: doc, token: token}
	s.Server = httptest.NewServer(page.New(page.Options{Query: http.HandlerFunc(s.query)}))
	t.Cleanup(s.Close)
	return s
}

func (s *metadataServer) query(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.seen = append(s.seen, r.Method+" "+r.RequestURI+" "+r.Header.Get("Authorization"))
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch {
	case s.token != "" && r.Header.Get("Authorization") != "Bearer "+s.token:
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"error":"missing bearer token"}`)
	case r.URL.Path == "/v1/metadata":
		w.Write(s.doc)
	default:
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"error":"no route"}`)
	}
}

func (s *metadataServer) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.seen)
}

func testSyntheticPage(t *testing.T, b *browser) {
	const tasks, instances = 200, 30
	srv := newMetadataServer(t, syntheticMetadata(tasks, instances), "")
	began := time.Now()
	b.do("open the synthetic page", chromedp.Navigate(srv.URL+"/"))
	var g pageGrid
	kafkatest.Eventually(t, 30*time.Second, "the 200 x 30 grid drawn", func() bool {
		g = b.grid()
		return g.Cells == tasks*instances
	})
	var renderMS float64
	b.eval(`performance.getEntriesByName('rackstream-render').map((e) => e.duration).pop() || -1`, &renderMS)
	t.Logf("200 x 30 placement: page loaded and drawn %v after navigating; the render itself took %.1f ms", time.Since(began).Round(time.Millisecond), renderMS)
	if renderMS < 0 {
		t.Error("the page recorded no render measure")
	}
	if len(g.Rows) != tasks || len(g.Columns) != instances {
		t.Fatalf("grid %d x %d, want %d x %d", len(g.Rows), len(g.Columns), tasks, instances)
	}
	// Columns grouped by zone, then cluster.
	for i := 1; i < len(g.Columns); i++ {
		p, c := g.Columns[i-1].Tags, g.Columns[i].Tags
		if p["zone"] > c["zone"] || p["zone"] == c["zone"] && p["cluster"] > c["cluster"] {
			t.Errorf("column %d (%v) before column %d (%v): not grouped by zone then cluster", i-1, p, i, c)
		}
	}
	// Instances are named by their endpoints (their ports differ: kept).
	tagSeen := false
	for _, c := range g.Columns {
		tagSeen = tagSeen || c.Tags["cluster"] == hostileTag
		if c.Text != syntheticEndpoint(c.ID) {
			t.Errorf("column of %q is named %q, want its endpoint %q", c.ID, c.Text, syntheticEndpoint(c.ID))
		}
	}
	var listed []string
	b.eval(`[...document.querySelectorAll('#instances tbody td.pid')].map((td) => td.textContent)`, &listed)
	if !slices.Contains(listed, hostileID) || !slices.Contains(listed, markupID) || !tagSeen {
		t.Errorf("the hostile id %q, markup id %q and tag %q are not all shown as text: instances %q, columns %v", hostileID, markupID, hostileTag, listed, g.Columns)
	}
	var injected struct {
		PW       string `json:"pw"`
		Elements int    `json:"elements"`
		Scripts  int    `json:"scripts"`
	}
	b.eval(`({pw: typeof window.pw, elements: document.querySelectorAll('main img, main i, main b, main script').length, scripts: document.scripts.length})`, &injected)
	if injected.PW != "undefined" || injected.Elements != 0 || injected.Scripts != 3 {
		t.Errorf("hostile names became markup: window.pw is %s, %d img/i/b/script elements in the page, %d scripts", injected.PW, injected.Elements, injected.Scripts)
	}
	if ready := g.Rows[9].Cells; !slices.Contains(ready, "A 1234") {
		t.Errorf("task 9's restoring active is not shown with its lag: %q", ready)
	}
	if !slices.Contains(g.Rows[11].Cells, "W 340") {
		t.Errorf("task 11's warmup is not shown with its lag: %q", g.Rows[11].Cells)
	}

	// The what-if of the hostile tag value: the selector's value goes to
	// /v1/whatif intact, and the answer is shown as text.
	b.eval(`(() => { const s = document.getElementById('lose'); s.value = 'cluster=' + `+strconv.Quote(hostileTag)+`; s.dispatchEvent(new Event('change')); return s.value; })()`, new(string))
	var lost string
	kafkatest.Eventually(t, 30*time.Second, "the what-if of the hostile cluster shown", func() bool {
		b.eval(`(document.getElementById('whatif-lost') || {}).textContent || ''`, &lost)
		return lost != ""
	})
	if want := syntheticEndpoint("node-05"); lost != want {
		t.Errorf("losing cluster=%s loses %q, want node-05 named by its endpoint %s", hostileTag, lost, want)
	}
	// Each instance's replica count after the loss: one row per
	// instance, the lost one marked lost.
	var counts struct {
		Rows int `json:"rows"`
		Lost int `json:"lost"`
	}
	b.eval(`(() => { const rows = [...document.querySelectorAll('#whatif-replicas tbody tr')];
  return {rows: rows.length, lost: rows.filter((r) => r.lastChild.textContent === 'lost').length}; })()`, &counts)
	if counts.Rows != 30 || counts.Lost != 1 {
		t.Errorf("the what-if's replica counts have %d rows, %d lost; want 30 instances, node-05 lost", counts.Rows, counts.Lost)
	}
	var pendingSaid bool
	b.eval(`document.getElementById('whatif').textContent.includes('A rebalance is pending')`, &pendingSaid)
	if !pendingSaid {
		t.Error("the what-if of a placement with a probing rebalance pending does not say the grid may differ")
	}
	b.audit("synthetic page")
	b.noProblems("synthetic page")
}

func testPageToken(t *testing.T, b *browser) {
	const token = "t0ken-for-the-page"
	srv := newMetadataServer(t, syntheticMetadata(12, 6), token)
	b.do("open the page of an instance with a token", chromedp.Navigate(srv.URL+"/"))
	kafkatest.Eventually(t, 30*time.Second, "the page asks for the token", func() bool {
		var shown bool
		b.eval(`!document.getElementById('token-form').hidden`, &shown)
		return shown
	})
	b.audit("token prompt")
	b.do("enter the token", chromedp.SendKeys(chromedp.ID("token"), token), chromedp.Click(chromedp.CSS("#token-form button")))
	kafkatest.Eventually(t, 30*time.Second, "the grid drawn with the token", func() bool {
		return b.grid().Cells == 12*6
	})
	var kept string
	b.eval(`sessionStorage.getItem('rackstream.token') || ''`, &kept)
	if kept != token {
		t.Errorf("sessionStorage holds %q, want the token", kept)
	}
	var local int
	b.eval(`localStorage.length + document.cookie.length`, &local)
	if local != 0 {
		t.Errorf("the token went beyond sessionStorage (localStorage or cookies)")
	}
	reqs := srv.requests()
	authorised := 0
	for _, r := range reqs {
		uri := strings.Fields(r)[1]
		if strings.Contains(uri, token) {
			t.Errorf("the token is in a URL: %s", uri)
		}
		if strings.HasSuffix(r, "Bearer "+token) {
			authorised++
		}
	}
	if authorised == 0 {
		t.Errorf("no data request carried the token as a header: %q", reqs)
	}
	// The prompt came from 401 answers, which Chromium logs as failed
	// loads; anything else is a problem.
	for _, p := range b.takeProblems() {
		if !strings.Contains(p, "401") {
			t.Errorf("token page: %s", p)
		}
	}
}

var screenshotDir = filepath.Join("..", "docs")

// screenshot writes the page to docs/name (with -update only).
func (b *browser) screenshot(name string) {
	b.t.Helper()
	if !*update {
		return
	}
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot: %v", err)
	}
	if err := os.MkdirAll(screenshotDir, 0o755); err != nil {
		b.t.Fatal(err)
	}
	path := filepath.Join(screenshotDir, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("wrote %s (%d bytes)", path, len(png))
}

// pageWhatIf is the what-if view as the page shows it.
type pageWhatIf struct {
	Generation int32      `json:"generation"`
	Lost       string     `json:"lost"`
	Orphans    string     `json:"orphans"`
	Failover   [][]string `json:"failover"`
}

const readWhatIfJS = `(() => {
  const g = document.getElementById('whatif-generation');
  if (!g) return null;
  return {generation: Number(g.textContent), lost: document.getElementById('whatif-lost').textContent,
    orphans: document.getElementById('whatif-orphans').textContent,
    failover: [...document.querySelectorAll('#failover tbody tr')].map((r) => [...r.cells].map((c) => c.textContent))};
})()`

// cliWhatIf renders `rackstream assign --lose` on doc as the page would.
func cliWhatIf(t *testing.T, doc []byte, lose string) (pageWhatIf, error) {
	cmd := exec.Command(binary, "assign", "--lose", lose, "-")
	cmd.Stdin = bytes.NewReader(doc)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return pageWhatIf{}, fmt.Errorf("rackstream assign --lose %s: %v: %s", lose, err, stderr.String())
	}
	var rep struct {
		Loss assignor.WhatIfResult `json:"loss"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		return pageWhatIf{}, fmt.Errorf("rackstream assign --lose %s: %v", lose, err)
	}
	// The page names dev's instances by their endpoints, whose ports all
	// differ (kept whole).
	var md assignor.Metadata
	if err := json.Unmarshal(doc, &md); err != nil {
		return pageWhatIf{}, err
	}
	name := map[string]string{}
	for _, c := range md.Clients {
		name[c.ID] = c.Endpoint
	}
	lost := make([]string, len(rep.Loss.ClientsLost))
	for i, id := range rep.Loss.ClientsLost {
		lost[i] = name[id]
	}
	w := pageWhatIf{Lost: strings.Join(lost, ", "), Orphans: "none", Failover: [][]string{}}
	if len(rep.Loss.TasksWithoutReplica) > 0 {
		s := make([]string, len(rep.Loss.TasksWithoutReplica))
		for i, task := range rep.Loss.TasksWithoutReplica {
			s[i] = strconv.Itoa(task)
		}
		w.Orphans = strings.Join(s, ", ")
	}
	for _, f := range rep.Loss.Failover {
		to, how := name[f.To], "its standby takes over"
		if f.To == "" {
			to = "(nobody survives)"
		}
		if f.Restore {
			how = "restores from the changelog"
		}
		w.Failover = append(w.Failover, []string{strconv.Itoa(f.Task), name[f.From], to, how})
	}
	return w, nil
}

func testDevPage(t *testing.T, b *browser) {
	app := fmt.Sprintf("e2e-page-%d", time.Now().UnixNano())
	args := []string{"dev", "--http-port", "0", "--kafka-port", "0", "--rate", "20", "--app", app}
	if brokers := os.Getenv(kafkatest.EnvBrokers); brokers != "" {
		args = append(args, "--brokers", brokers)
	}
	began := time.Now()
	dev := start(t, "rackstream dev", args...)
	var addrs map[string]string
	kafkatest.Eventually(t, time.Minute, "dev lists its instances", func() bool {
		if dev.Exited() {
			t.Fatalf("dev exited with %d", dev.Code())
		}
		ms := devInstanceRE.FindAllStringSubmatch(dev.Out.String(), -1)
		if len(ms) < 6 {
			return false
		}
		addrs = map[string]string{}
		for _, m := range ms {
			addrs[m[1]] = m[2]
		}
		return true
	})
	base := "http://" + addrs["i1"]
	// Until i1 has joined, /v1/metadata answers 503 (the page says so),
	// which Chromium logs as a failed load: open the page once it has.
	kafkatest.Eventually(t, 2*time.Minute, "i1 has a placement", func() bool {
		code, _ := cluster.GetJSON(base+"/v1/metadata", nil)
		return code == 200
	})
	b.do("open i1's page", chromedp.Navigate(base+"/"))

	// The page shows a settled placement: the one /v1/metadata has, with
	// no probing rebalance pending.
	var g pageGrid
	kafkatest.Eventually(t, 2*time.Minute, "the page shows 12 tasks, each with an active and 2 standbys in 3 zones", func() bool {
		var md cluster.Metadata
		if code, err := cluster.GetJSON(base+"/v1/metadata", &md); code != 200 || err != nil || md.ProbingRebalanceNeeded {
			return false
		}
		g = b.grid()
		return g.Generation == int(md.Generation) && g.spreadProblem(12, 6, 2, "zone") == ""
	})
	t.Logf("the page showed the settled placement of generation %d %v after dev started", g.Generation, time.Since(began).Round(time.Millisecond))
	b.audit("dev page")
	b.noProblems("dev page")
	b.screenshot("placement-page-healthy.png")

	// The what-if of losing a zone, on the page and from the CLI on the
	// same metadata (the same generation of the same instance).
	const lose = "zone=eu-central-1b"
	b.eval(`(() => { const s = document.getElementById('lose'); s.value = '`+lose+`'; s.dispatchEvent(new Event('change')); return s.value; })()`, new(string))
	var shown pageWhatIf
	var last string
	kafkatest.Eventually(t, time.Minute, "the page's what-if of "+lose+" is rackstream assign --lose's on the same metadata", func() bool {
		var w *pageWhatIf
		b.eval(readWhatIfJS, &w)
		if w == nil {
			return false
		}
		resp, err := cluster.HTTPClient.Get(base + "/v1/metadata")
		if err != nil {
			return false
		}
		doc, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		var md cluster.Metadata
		if err != nil || resp.StatusCode != 200 || json.Unmarshal(doc, &md) != nil || md.Generation != w.Generation {
			return false
		}
		want, err := cliWhatIf(t, doc, lose)
		if err != nil {
			t.Fatal(err)
		}
		want.Generation = md.Generation
		if diff := fmt.Sprintf("page %+v\n cli %+v", *w, want); fmt.Sprint(*w) != fmt.Sprint(want) {
			if diff != last {
				t.Logf("not (yet) the same:\n%s", diff)
				last = diff
			}
			return false
		}
		shown = *w
		return true
	})
	if shown.Orphans != "none" || len(shown.Failover) != 4 || strings.Count(shown.Lost, ",") != 1 {
		t.Errorf("losing one zone of three with 2 standbys per task: %+v; want 2 instances lost, 4 actives failing over, no task without a replica", shown)
	}
	b.audit("dev page, what-if")
	b.noProblems("dev page, what-if")
	b.screenshot("placement-page-zone-lost.png")

	// Kill an instance through the dev admin route (no Origin header: a
	// same-machine tool, not a cross-site page) and watch the page.
	var insts []struct {
		ID        string `json:"id"`
		ProcessID string `json:"process_id"`
	}
	if code, err := cluster.GetJSON(base+"/v1/dev/instances", &insts); code != 200 || err != nil {
		t.Fatalf("dev instances: %d %v", code, err)
	}
	victim := ""
	for _, in := range insts {
		if in.ID == "i2" {
			victim = in.ProcessID
		}
	}
	if victim == "" || !slices.ContainsFunc(g.Columns, func(c gridColumn) bool { return c.ID == victim }) {
		t.Fatalf("i2's process id %q is not a column of the page", victim)
	}
	if code, body, err := cluster.Post(base + "/v1/dev/instances/i2/kill"); code != 202 || err != nil {
		t.Fatalf("kill i2: %d %s %v", code, body, err)
	}
	killed := time.Now()
	kafkatest.Eventually(t, 2*time.Minute, "the page shows the placement without the killed instance", func() bool {
		now := b.grid()
		for _, c := range now.Columns {
			if c.ID == victim {
				return false
			}
		}
		return now.Generation > g.Generation && now.spreadProblem(12, 5, 2, "zone") == ""
	})
	t.Logf("the page showed the new placement %v after the kill", time.Since(killed).Round(time.Millisecond))
	var history []string
	b.eval(`[...document.querySelectorAll('#history li')].map((li) => li.textContent)`, &history)
	if !slices.ContainsFunc(history, func(h string) bool { return strings.Contains(h, "left "+addrs["i2"]) }) {
		t.Errorf("the rebalance history does not show i2 (%s, named by its endpoint %s) leaving: %q", victim, addrs["i2"], history)
	}
	b.noProblems("dev page after the kill")

	if code := dev.Signal(syscall.SIGINT, time.Minute); code != 0 {
		t.Errorf("dev exited %d after SIGINT", code)
	}
}
