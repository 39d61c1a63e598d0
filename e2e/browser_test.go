package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/rackstream/rackstream/harness/kafkatest"
)

// browser is a headless Chromium a test drives through the DevTools
// protocol (chromedp). It collects every console error, uncaught exception
// and error-level browser log entry (a CSP violation, a failed load), so
// that a test can assert there were none.
type browser struct {
	t   *testing.T // the test that reports failures (see on)
	ctx context.Context
	con *console
}

// console collects the problems the browser reports.
type console struct {
	mu       sync.Mutex
	problems []string // guarded by mu
}

// on returns the same browser reporting to t (a subtest).
func (b *browser) on(t *testing.T) *browser { return &browser{t: t, ctx: b.ctx, con: b.con} }

// chromiumPath finds Chromium. Outside CI a machine without it skips the
// test, saying so; under CI (.ci/run installs it) its absence fails.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	kafkatest.SkipOrFail(t, "no Chromium on PATH: install the Debian package chromium (CI does) to run the placement page's browser test")
	return ""
}

// newBrowser starts Chromium headless with a fresh profile; it is stopped
// when the test ends.
func newBrowser(t *testing.T) *browser {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.Headless,
		chromedp.NoSandbox, // CI runs as root, where the sandbox can't start
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	b := &browser{t: t, ctx: ctx, con: &console{}}
	started := time.Now()
	// The first action starts the browser (not under a timeout: that
	// would end the browser with it).
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		cancel()
		cancelAlloc()
		t.Fatalf("start Chromium: %v", err)
	}
	t.Logf("Chromium started in %v", time.Since(started).Round(time.Millisecond))
	messages := chromedp.Console(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				b.con.mu.Lock()
				b.con.problems = append(b.con.problems, m.String()+" "+m.URL)
				b.con.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
		<-done
	})
	return b
}

// takeProblems returns the problems seen since the last call.
func (b *browser) takeProblems() []string {
	b.con.mu.Lock()
	defer b.con.mu.Unlock()
	p := b.con.problems
	b.con.problems = nil
	return p
}

// noProblems fails the test for every console error, exception and error
// log entry seen since the last call.
func (b *browser) noProblems(when string) {
	b.t.Helper()
	for _, p := range b.takeProblems() {
		b.t.Errorf("%s: %s", when, p)
	}
}

// do runs actions with a deadline.
func (b *browser) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// eval evaluates a JavaScript expression in the page and decodes its
// value (JSON) into v.
func (b *browser) eval(expr string, v any) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[string]("JSON.stringify("+expr+")"))
	if err != nil {
		b.t.Fatalf("evaluate: %v", err)
	}
	if err := json.Unmarshal([]byte(raw), v); err != nil {
		b.t.Fatalf("evaluate: %v (value %s)", err, raw)
	}
}

// pageGrid is the placement grid as the page shows it.
type pageGrid struct {
	Generation int          `json:"generation"`
	Columns    []gridColumn `json:"columns"`
	Rows       []struct {
		Task  int      `json:"task"`
		Cells []string `json:"cells"`
	} `json:"rows"`
	Cells int `json:"cells"`
}

// gridColumn is an instance's column: its id, the name it shows (a
// prefix of the id), and its tag values.
type gridColumn struct {
	ID   string            `json:"id"`
	Text string            `json:"text"`
	Tags map[string]string `json:"tags"`
}

// readGridJS reads the grid back from the DOM: column ids (data-id) and
// names from the last header row, each column's tag values from the rows above (a row per tag
// key, named in its first cell, groups spanning columns), each row's cell
// texts.
const readGridJS = `(() => {
  const g = document.getElementById('grid');
  const gen = document.getElementById('generation');
  if (!g || !g.tHead || g.tHead.rows.length === 0) return {generation: -1, columns: [], rows: [], cells: 0};
  const head = [...g.tHead.rows];
  const cols = [...head[head.length - 1].cells].slice(1).map((c) => ({id: c.dataset.id, text: c.textContent, tags: {}}));
  for (const r of head.slice(0, -1)) {
    const cells = [...r.cells];
    const dim = cells[0].textContent;
    let i = 0;
    for (const c of cells.slice(1)) for (let k = 0; k < c.colSpan; k++) cols[i++].tags[dim] = c.textContent;
  }
  const rows = [...g.tBodies[0].rows].map((r) => ({task: Number(r.cells[0].textContent), cells: [...r.cells].slice(1).map((c) => c.textContent)}));
  return {generation: gen ? Number(gen.textContent) : -1, columns: cols, rows, cells: g.tBodies[0].querySelectorAll('td').length};
})()`

func (b *browser) grid() pageGrid {
	b.t.Helper()
	var g pageGrid
	b.eval(readGridJS, &g)
	return g
}

// spreadProblem says why the grid is not tasks rows on clients columns,
// each row with one active and standbys standbys whose tag values are all
// distinct, or "" when it is.
func (g pageGrid) spreadProblem(tasks, clients, standbys int, tag string) string {
	if len(g.Rows) != tasks || len(g.Columns) != clients {
		return fmt.Sprintf("%d rows and %d columns, want %d and %d", len(g.Rows), len(g.Columns), tasks, clients)
	}
	for _, r := range g.Rows {
		actives, sbs := 0, 0
		values := map[string]bool{}
		for i, c := range r.Cells {
			switch {
			case c == "A":
				actives++
			case strings.HasPrefix(c, "S "):
				sbs++
			case c == "":
				continue
			default:
				return fmt.Sprintf("task %d: cell %q on %s", r.Task, c, g.Columns[i].ID)
			}
			values[g.Columns[i].Tags[tag]] = true
		}
		if actives != 1 || sbs != standbys || len(values) != 1+standbys {
			return fmt.Sprintf("task %d: %d active, %d standbys in %d %ss", r.Task, actives, sbs, len(values), tag)
		}
	}
	return ""
}

// auditJS checks what a user with a screen reader or weak sight meets:
// every form control has a label (a <label> with text, aria-label, or a
// button's own text), and every visible text contrasts at least 4.5:1
// with the background behind it (WCAG 2 AA), computed from the styles the
// browser applied (semi-transparent backgrounds composited up the tree).
const auditJS = `(() => {
  const problems = [];
  for (const c of document.querySelectorAll('input, select, textarea, button')) {
    if (c.type === 'hidden') continue;
    const named = [...(c.labels || [])].some((l) => l.textContent.trim() !== '') ||
      (c.getAttribute('aria-label') || '').trim() !== '' || (c.tagName === 'BUTTON' && c.textContent.trim() !== '');
    if (!named) problems.push('control without a label: ' + c.tagName.toLowerCase() + '#' + c.id);
  }
  const parse = (s) => {
    const m = /rgba?\(([^)]*)\)/.exec(s);
    if (!m) return null;
    const p = m[1].split(/[\s,\/]+/).filter(Boolean).map(Number);
    return {r: p[0], g: p[1], b: p[2], a: p.length > 3 ? p[3] : 1};
  };
  const over = (top, under) => ({r: top.r * top.a + under.r * (1 - top.a), g: top.g * top.a + under.g * (1 - top.a), b: top.b * top.a + under.b * (1 - top.a), a: 1});
  const background = (e) => {
    const layers = [];
    for (; e; e = e.parentElement) {
      const c = parse(getComputedStyle(e).backgroundColor);
      if (c && c.a > 0) { layers.push(c); if (c.a >= 1) break; }
    }
    let bg = {r: 255, g: 255, b: 255, a: 1};
    for (const l of layers.reverse()) bg = over(l, bg);
    return bg;
  };
  const lum = (c) => {
    const f = (v) => { v /= 255; return v <= 0.04045 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(c.r) + 0.7152 * f(c.g) + 0.0722 * f(c.b);
  };
  let checked = 0;
  let worst = 21;
  const seen = new Set();
  const w = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (w.nextNode()) {
    const e = w.currentNode.parentElement;
    if (!e || seen.has(e) || w.currentNode.textContent.trim() === '') continue;
    seen.add(e);
    if (e.getClientRects().length === 0) continue;
    const cs = getComputedStyle(e);
    if (cs.visibility !== 'visible' || Number(cs.opacity) === 0) continue;
    const bg = background(e);
    const fg = over(parse(cs.color), bg);
    const l1 = lum(fg), l2 = lum(bg);
    const ratio = (Math.max(l1, l2) + 0.05) / (Math.min(l1, l2) + 0.05);
    checked++;
    worst = Math.min(worst, ratio);
    if (ratio < 4.5) problems.push('contrast ' + ratio.toFixed(2) + ':1 for "' + w.currentNode.textContent.trim().slice(0, 40) + '" (' + cs.color + ' on rgb(' + [bg.r, bg.g, bg.b].map(Math.round).join(',') + '))');
  }
  return {problems: problems.slice(0, 20), count: problems.length, checked, worst};
})()`

// audit fails the test for an unlabelled control or a text below 4.5:1.
func (b *browser) audit(when string) {
	b.t.Helper()
	var res struct {
		Problems []string `json:"problems"`
		Count    int      `json:"count"`
		Checked  int      `json:"checked"`
		Worst    float64  `json:"worst"`
	}
	b.eval(auditJS, &res)
	if res.Checked == 0 {
		b.t.Fatalf("%s: the audit found no text to check", when)
	}
	b.t.Logf("%s: %d texts checked, lowest contrast %.2f:1", when, res.Checked, res.Worst)
	for _, p := range res.Problems {
		b.t.Errorf("%s: %s", when, p)
	}
	if res.Count > len(res.Problems) {
		b.t.Errorf("%s: and %d more", when, res.Count-len(res.Problems))
	}
}
