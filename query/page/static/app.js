// The placement page's script. It polls this instance's /v1/metadata and
// draws it; it talks to no other origin and no other instance.
//
// Everything in the document that a group member chose (ids, tags,
// endpoints, reasons) is untrusted: it reaches the page only through
// textContent and attribute values, never as markup.
'use strict';

(() => {
  const POLL_MS = 1000;
  const TOKEN_KEY = 'rackstream.token';
  const HISTORY = 8;
  const FLASH_MS = 10000;
  const MAX_LIST = 24; // task lists longer than this are cut, with the count

  const $ = (id) => document.getElementById(id);

  // What the page remembers between polls.
  const st = {
    text: '', // the last metadata document, as received
    doc: null,
    generation: null,
    roles: null, // the role map of the last document
    changed: new Set(), // cells ("task|client") changed by the last rebalance
    history: [],
    grid: null, // {key, cells: [[td]], rows: [tr]}
    optionsKey: '',
    whatif: null, // {selector, generation, result} or {selector, error}
    whatifSeq: 0,
    restoreSeen: new Map(), // "task|client" -> the largest lag seen while restoring
    timer: 0,
  };

  // el builds an element; children are nodes or strings (as text).
  function el(tag, props, ...children) {
    const e = document.createElement(tag);
    if (props) {
      for (const [k, v] of Object.entries(props)) {
        if (v === undefined || v === null || v === false) continue;
        if (k === 'class') e.className = v;
        else e.setAttribute(k, String(v));
      }
    }
    for (const c of children) {
      if (c === undefined || c === null) continue;
      e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return e;
  }

  function str(v) { return typeof v === 'string' ? v : (v === undefined || v === null ? '' : String(v)); }
  function arr(v) { return Array.isArray(v) ? v : []; }
  function cut(s, n) { s = str(s); return s.length > n ? s.slice(0, n) + '…' : s; }
  function cmp(a, b) { return a < b ? -1 : a > b ? 1 : 0; }
  function key(task, client) { return task + '|' + client; }
  function listTasks(ts) {
    ts = arr(ts);
    if (ts.length === 0) return 'none';
    const shown = ts.slice(0, MAX_LIST).join(', ');
    return ts.length > MAX_LIST ? shown + ', … (' + ts.length + ' in all)' : shown;
  }
  function clock(d) { return d.toTimeString().slice(0, 8); }

  function notice(msg) { $('notice').textContent = msg || ''; }

  // api GETs path from this instance with the token, if one was given.
  async function api(path) {
    const headers = {};
    const token = sessionStorage.getItem(TOKEN_KEY);
    if (token) headers.Authorization = 'Bearer ' + token;
    const resp = await fetch(path, { headers, cache: 'no-store', credentials: 'omit', redirect: 'error' });
    const text = await resp.text();
    return { resp, text };
  }

  function errorOf(text) {
    try {
      const b = JSON.parse(text);
      return str(b.error || b.message || text);
    } catch (_) {
      return text;
    }
  }

  function askToken(why) {
    clearTimeout(st.timer);
    $('token-form').hidden = false;
    notice(why);
    $('token').focus();
  }

  async function poll() {
    clearTimeout(st.timer);
    try {
      const { resp, text } = await api('/v1/metadata');
      if (resp.status === 401) {
        askToken(sessionStorage.getItem(TOKEN_KEY) ? 'The token was refused: enter the instance\'s http.auth.token.' : 'This instance needs a token.');
        return;
      }
      if (!resp.ok) {
        notice('/v1/metadata answered ' + resp.status + ': ' + cut(errorOf(text), 300));
      } else {
        notice('');
        if (text !== st.text) {
          st.text = text;
          render(JSON.parse(text));
        }
      }
    } catch (e) {
      notice('/v1/metadata: ' + cut(e && e.message, 300));
    }
    st.timer = setTimeout(poll, POLL_MS);
  }

  // ---- the document, digested -------------------------------------------

  function digest(doc) {
    const clients = arr(doc.clients).map((c) => ({
      id: str(c.id), endpoint: str(c.endpoint),
      tags: c.tags && typeof c.tags === 'object' ? c.tags : {},
      active: arr(c.active), standby: arr(c.standby), warmup: arr(c.warmup),
    }));
    const quality = doc.quality && typeof doc.quality === 'object' ? doc.quality : {};
    let dims = arr(doc.rack_aware_assignment_tags).map(str);
    if (dims.length === 0) dims = arr(quality.dimensions).map((d) => str(d.tag));
    const tagOf = (c, k) => (Object.prototype.hasOwnProperty.call(c.tags, k) ? str(c.tags[k]) : '');
    // Columns: grouped by the rack-aware tag values in priority order,
    // then by id.
    clients.sort((a, b) => {
      for (const k of dims) {
        const d = cmp(tagOf(a, k), tagOf(b, k));
        if (d) return d;
      }
      return cmp(a.id, b.id);
    });
    const tasks = arr(doc.tasks).map((t) => ({
      task: Number(t.task), active: str(t.active), standby: arr(t.standby).map(str), warmup: arr(t.warmup).map(str),
    }));
    const roles = new Map();
    for (const t of tasks) {
      for (const id of t.warmup) roles.set(key(t.task, id), 'w');
      for (const id of t.standby) roles.set(key(t.task, id), 's');
      if (t.active) roles.set(key(t.task, t.active), 'a');
    }
    // Each client's replicas, for the instances table: [task, role, key].
    const held = new Map();
    for (const t of tasks) {
      for (const id of [t.active, ...t.standby, ...t.warmup]) {
        if (!id) continue;
        if (!held.has(id)) held.set(id, []);
        const k = key(t.task, id);
        held.get(id).push([t.task, roles.get(k), k]);
      }
    }
    const status = doc.status && typeof doc.status === 'object' ? doc.status : {};
    const lags = new Map();
    for (const l of arr(status.lags)) lags.set(key(Number(l.task), str(l.client)), Number(l.lag));
    const ready = new Map();
    for (const c of arr(status.clients)) ready.set(str(c.id), { ready: c.ready === true, reason: str(c.reason) });
    // Names for people (names.js), the process id beside them.
    const names = displayNames(clients);
    const nameOf = (id) => names.get(id) || id;
    let standbys = Number(doc.num_standby_replicas);
    if (!Number.isInteger(standbys)) standbys = tasks.reduce((m, t) => Math.max(m, t.standby.length), 0);
    return { doc, clients, tasks, dims, tagOf, roles, held, lags, ready, quality, standbys, status, nameOf };
  }

  // ---- rendering ---------------------------------------------------------

  function render(doc) {
    const t0 = performance.now();
    const d = digest(doc);
    const gen = Number(doc.generation);
    if (st.generation !== null && gen !== st.generation) rebalanced(d, gen);
    else if (st.generation === null) st.history.unshift({ at: new Date(), text: 'generation ' + gen + ' (first seen)' });
    st.generation = gen;
    st.roles = d.roles;
    st.doc = d;

    renderSummary(d);
    renderGrid(d);
    renderQuality(d);
    renderOptions(d);
    renderInstances(d);
    renderHistory();
    $('app').hidden = false;
    if (st.whatif && st.whatif.selector && st.whatif.generation !== gen) fetchWhatIf(st.whatif.selector);
    performance.clearMeasures('rackstream-render');
    performance.measure('rackstream-render', { start: t0, end: performance.now() });
  }

  function rebalanced(d, gen) {
    const before = st.roles || new Map();
    const changed = new Set();
    for (const [k, r] of d.roles) if (before.get(k) !== r) changed.add(k);
    for (const k of before.keys()) if (!d.roles.has(k)) changed.add(k);
    st.changed = changed;
    let moved = 0;
    for (const t of d.tasks) if (t.active && before.get(key(t.task, t.active)) !== 'a') moved++;
    const now = new Set(d.clients.map((c) => c.id));
    const was = new Set(st.doc ? st.doc.clients.map((c) => c.id) : []);
    const joined = [...now].filter((id) => !was.has(id)).sort();
    const left = [...was].filter((id) => !now.has(id)).sort();
    let text = 'generation ' + st.generation + ' → ' + gen + ': ' + moved + ' active' + (moved === 1 ? '' : 's') + ' moved, ' + changed.size + ' replica' + (changed.size === 1 ? '' : 's') + ' changed';
    if (joined.length) text += '; joined ' + joined.map(d.nameOf).join(', ');
    if (left.length) text += '; left ' + left.map(st.doc.nameOf).join(', ');
    const entry = { at: new Date(), text, fresh: true };
    st.history.unshift(entry);
    st.history.length = Math.min(st.history.length, HISTORY);
    const s = $('summary');
    s.classList.add('flash');
    setTimeout(() => {
      entry.fresh = false;
      if (st.generation === gen) s.classList.remove('flash');
      renderHistory();
    }, FLASH_MS);
  }

  function renderSummary(d) {
    const s = $('summary');
    const asOf = Date.parse(str(d.status.as_of));
    const parts = [
      'Instance ', el('strong', { class: 'mono', title: 'process id ' + str(d.doc.self) }, d.nameOf(str(d.doc.self))),
      ' · generation ', el('strong', { id: 'generation' }, str(d.doc.generation)),
      ' · ' + d.tasks.length + ' tasks on ' + d.clients.length + ' instances · ' + d.standbys + ' standbys per task · partitioner ' + str(d.doc.partitioner),
    ];
    if (!Number.isNaN(asOf)) parts.push(' · status as of ' + clock(new Date(asOf)));
    if (d.doc.probing_rebalance_needed) parts.push(' · a probing rebalance will follow (warmups catching up)');
    s.replaceChildren(...parts);
  }

  function renderGrid(d) {
    const gridKey = d.dims.join('\u0000') + '\u0001' + d.clients.map((c) => c.id + '\u0000' + c.endpoint + '\u0000' + d.dims.map((k) => d.tagOf(c, k)).join('\u0000')).join('\u0001') + '\u0001' + d.tasks.map((t) => t.task).join(',');
    if (!st.grid || st.grid.key !== gridKey) buildGrid(d, gridKey);
    const wi = whatIfOverlay();
    const g = st.grid;
    for (let r = 0; r < d.tasks.length; r++) {
      const t = d.tasks[r];
      const orphan = !t.active || wi.orphans.has(t.task);
      const rowClass = orphan ? 'orphan' : '';
      if (g.rows[r].className !== rowClass) g.rows[r].className = rowClass;
      for (let c = 0; c < d.clients.length; c++) {
        const id = d.clients[c].id;
        const k = key(t.task, id);
        const role = d.roles.get(k);
        const lag = d.lags.get(k);
        let text = '';
        let cls = '';
        let title = '';
        if (role === 'a') {
          if (lag > 0) {
            text = 'A ' + lag; cls = 'cell-r'; title = 'active, restoring: ' + lag + ' records to go';
          } else {
            text = 'A'; cls = 'cell-a'; title = 'active';
          }
        } else if (role === 's') {
          text = 'S ' + (lag >= 0 ? lag : '?'); cls = 'cell-s'; title = lag >= 0 ? 'standby, lag ' + lag : 'standby, lag unknown';
        } else if (role === 'w') {
          text = 'W ' + (lag >= 0 ? lag : '?'); cls = 'cell-w'; title = lag >= 0 ? 'warmup, lag ' + lag : 'warmup, lag unknown';
        }
        if (wi.lost.has(id)) cls += ' lost';
        if (wi.targets.get(t.task) === id) { cls += ' target'; title += (title ? '; ' : '') + 'fails over here'; }
        if (st.changed.has(k)) { cls += ' changed'; title += (title ? '; ' : '') + 'changed in the last rebalance'; }
        const td = g.cells[r][c];
        if (td.textContent !== text) td.textContent = text;
        if (td.className !== cls.trim()) td.className = cls.trim();
        if (td.title !== title) td.title = title;
      }
    }
    for (let c = 0; c < d.clients.length; c++) {
      const th = g.heads[c];
      const cls = 'id' + (wi.lost.has(d.clients[c].id) ? ' lost' : '');
      if (th.className !== cls) th.className = cls;
    }
  }

  function buildGrid(d, gridKey) {
    const thead = el('thead');
    const prefix = (c, upto) => d.dims.slice(0, upto + 1).map((k) => d.tagOf(c, k)).join('\u0000');
    d.dims.forEach((k, i) => {
      const tr = el('tr', { class: 'r' + Math.min(i, 5) });
      tr.append(el('th', { scope: 'row', class: 'corner dim' }, k));
      for (let c = 0; c < d.clients.length;) {
        let n = 1;
        while (c + n < d.clients.length && prefix(d.clients[c + n], i) === prefix(d.clients[c], i)) n++;
        const v = d.tagOf(d.clients[c], k);
        tr.append(el('th', { scope: 'colgroup', colspan: n, class: 'group' }, v === '' ? '(none)' : v));
        c += n;
      }
      thead.append(tr);
    });
    const idRow = el('tr', { class: 'r' + Math.min(d.dims.length, 5) });
    idRow.append(el('th', { scope: 'col', class: 'corner' }, 'task'));
    const heads = d.clients.map((c) => {
      const th = el('th', { scope: 'col', class: 'id', title: 'process id ' + c.id + (c.endpoint ? ' at ' + c.endpoint : ''), 'data-id': c.id }, d.nameOf(c.id));
      idRow.append(th);
      return th;
    });
    thead.append(idRow);
    const tbody = el('tbody');
    const rows = [];
    const cells = [];
    for (const t of d.tasks) {
      const tr = el('tr', null, el('th', { scope: 'row' }, String(t.task)));
      const row = [];
      for (let c = 0; c < d.clients.length; c++) {
        const td = el('td');
        row.push(td);
        tr.append(td);
      }
      rows.push(tr);
      cells.push(row);
      tbody.append(tr);
    }
    $('grid').replaceChildren(thead, tbody);
    st.grid = { key: gridKey, rows, cells, heads };
  }

  function renderQuality(d) {
    const body = $('quality').tBodies[0];
    body.replaceChildren(...arr(d.quality.dimensions).map((q) => el('tr', null,
      el('th', { scope: 'row' }, str(q.tag)), el('td', null, str(q.values)),
      el('td', { class: Number(q.tasks_repeating) > 0 ? 'bad' : 'ok' }, str(q.tasks_repeating)))));
    const short = d.tasks.filter((t) => t.standby.length < d.standbys).map((t) => t.task);
    $('shortfall').replaceChildren('Tasks short of standbys: ',
      el('strong', { class: short.length ? 'bad' : 'ok' }, String(short.length)),
      short.length ? ' (' + listTasks(short) + '; ' + str(d.quality.standby_shortfall) + ' standbys missing)' : '');
    const exposed = arr(d.quality.exposure).filter((e) => arr(e.tasks_without_replica).length > 0);
    const items = exposed.map((e) => el('li', null, 'Losing ', el('span', { class: 'mono' }, str(e.tag) + '=' + str(e.value)),
      ' leaves ' + arr(e.tasks_without_replica).length + ' task(s) without any replica: ' + listTasks(e.tasks_without_replica)));
    if (items.length === 0 && arr(d.quality.exposure).length > 0) items.push(el('li', null, 'Losing any one tag value leaves every task a replica.'));
    $('exposure').replaceChildren(...items);
    renderCrossZone(d.doc.cross_zone);
  }

  // renderCrossZone shows the leader's expected cross-zone traffic: the
  // total, and the tasks whose active or a standby sits with no replica.
  function renderCrossZone(cz) {
    if (!cz || typeof cz !== 'object') { $('crosszone').replaceChildren(); return; }
    const tasks = arr(cz.tasks);
    const remoteActive = tasks.filter((t) => t && t.active_local === false).map((t) => t.task);
    const remoteStandby = tasks.filter((t) => t && arr(t.standby_local).some((l) => l === false)).map((t) => t.task);
    const fmt = (v) => String(Math.round(Number(v) * 100) / 100);
    $('crosszone').replaceChildren('Expected cross-zone traffic (' + str(cz.strategy) + '): ',
      el('strong', { class: Number(cz.total) > 0 ? 'bad' : 'ok' }, fmt(cz.total)),
      ' per second (fetch ' + fmt(cz.fetch) + ', produce ' + fmt(cz.produce) + '; bytes, or partition flows without byte rates)',
      remoteActive.length ? '; actives away from every replica: ' + listTasks(remoteActive) : '',
      remoteStandby.length ? '; standbys away from every replica: ' + listTasks(remoteStandby) : '',
      arr(cz.unknown).length ? '; without a rack: ' + cut(arr(cz.unknown).map(str).join('; '), 300) : '');
  }

  // renderOptions fills the what-if selector: every value of every tag key
  // (rack-aware keys first), then every instance.
  function renderOptions(d) {
    const keys = [...d.dims];
    for (const c of d.clients) for (const k of Object.keys(c.tags).sort()) if (!keys.includes(k)) keys.push(k);
    const groups = keys.map((k) => ({
      label: 'tag ' + k,
      values: [...new Set(d.clients.filter((c) => Object.prototype.hasOwnProperty.call(c.tags, k)).map((c) => k + '=' + d.tagOf(c, k)))].sort(),
    }));
    // An id with '=' would read as a tag value: such an instance can't be
    // named alone.
    const ids = d.clients.map((c) => c.id).filter((id) => id && !id.includes('=')).sort();
    groups.push({ label: 'instance', values: ids, labels: ids.map((id) => d.nameOf(id) + ' (' + id + ')') });
    const optionsKey = JSON.stringify(groups);
    if (optionsKey === st.optionsKey) return;
    st.optionsKey = optionsKey;
    const sel = $('lose');
    const was = sel.value;
    sel.replaceChildren(el('option', { value: '' }, 'nothing'), ...groups.filter((g) => g.values.length).map((g) =>
      el('optgroup', { label: g.label }, ...g.values.map((v, i) => el('option', { value: v }, g.labels ? g.labels[i] : v)))));
    sel.value = was;
    if (sel.value !== was) {
      sel.value = '';
      fetchWhatIf(''); // what it named is gone
    }
  }

  function whatIfOverlay() {
    const out = { lost: new Set(), targets: new Map(), orphans: new Set() };
    const w = st.whatif;
    if (!w || !w.result) return out;
    for (const id of arr(w.result.clients_lost)) out.lost.add(str(id));
    for (const f of arr(w.result.failover)) if (f.to) out.targets.set(Number(f.task), str(f.to));
    for (const t of arr(w.result.tasks_without_replica)) out.orphans.add(Number(t));
    return out;
  }

  async function fetchWhatIf(selector) {
    const seq = ++st.whatifSeq;
    if (!selector) {
      showWhatIf(null);
      return;
    }
    let w;
    try {
      const { resp, text } = await api('/v1/whatif?lose=' + encodeURIComponent(selector));
      if (resp.status === 401) {
        askToken('This instance needs a token.');
        return;
      }
      w = resp.ok
        ? { selector, generation: Number(resp.headers.get('Rackstream-Generation')), result: JSON.parse(text) }
        : { selector, generation: st.generation, error: '/v1/whatif answered ' + resp.status + ': ' + cut(errorOf(text), 300) };
    } catch (e) {
      w = { selector, generation: st.generation, error: '/v1/whatif: ' + cut(e && e.message, 300) };
    }
    if (seq === st.whatifSeq) showWhatIf(w);
  }

  function showWhatIf(w) {
    st.whatif = w;
    const box = $('whatif');
    if (!w) {
      box.replaceChildren(el('p', null, 'Choose a tag value or an instance to see which tasks would be left without any replica, and where each lost active would fail over.'));
    } else if (w.error) {
      box.replaceChildren(el('p', { class: 'bad' }, w.error));
    } else {
      const r = w.result;
      const nameOf = st.doc ? st.doc.nameOf : str;
      const rows = arr(r.failover).map((f) => el('tr', null,
        el('th', { scope: 'row' }, str(f.task)), el('td', { class: 'id', title: 'process id ' + str(f.from) }, nameOf(str(f.from))),
        el('td', { class: 'id', title: f.to ? 'process id ' + str(f.to) : null }, f.to ? nameOf(str(f.to)) : '(nobody survives)'),
        el('td', null, f.restore ? 'restores from the changelog' : 'its standby takes over')));
      // Replicas and cross-zone traffic, now and after the loss.
      const fig = lossFigures(st.doc ? st.doc.clients : [], r, st.doc ? st.doc.doc.cross_zone : null);
      const fmt = (v) => String(Math.round(Number(v) * 100) / 100);
      const crossZone = fig.crossZone
        ? el('p', null, 'Expected cross-zone traffic per second: now ' + fmt(fig.crossZone.now) + ', after the loss ',
          el('strong', { id: 'whatif-crosszone', class: fig.crossZone.after > fig.crossZone.now ? 'bad' : 'ok' }, fmt(fig.crossZone.after)), '.')
        : null;
      const replicaRows = fig.replicas.map((x) => el('tr', { class: x.lost ? 'lost' : null },
        el('th', { scope: 'row', class: 'id', title: 'process id ' + x.id }, nameOf(x.id)),
        el('td', null, String(x.now)),
        el('td', { class: !x.lost && x.after !== null && x.after > x.now ? 'bad' : null }, x.lost ? 'lost' : (x.after === null ? '?' : String(x.after)))));
      const replicas = el('table', { id: 'whatif-replicas' },
        el('caption', null, 'Replicas per instance (actives and standbys: the state each holds on disk and in memory)'),
        el('thead', null, el('tr', null, el('th', { scope: 'col' }, 'Instance'), el('th', { scope: 'col' }, 'Now'), el('th', { scope: 'col' }, 'After the loss'))),
        el('tbody', null, ...replicaRows));
      // The what-if is of the live placement the grid shows (the same
      // computation as `rackstream assign --lose` on the document).
      const pending = st.doc && st.doc.doc.probing_rebalance_needed
        ? el('p', null, 'A rebalance is pending: this is the loss of the placement running now; the next one may differ.')
        : null;
      box.replaceChildren(
        ...(pending ? [pending] : []),
        el('p', null, 'Generation ', el('span', { id: 'whatif-generation' }, String(w.generation)), ': losing ',
          el('span', { class: 'mono' }, arr(r.lose).map((s) => (s.tag ? str(s.tag) + '=' + str(s.value) : nameOf(str(s.client)))).join(' and ')),
          ' loses instance(s) ', el('span', { class: 'mono', id: 'whatif-lost' }, arr(r.clients_lost).map((id) => nameOf(str(id))).join(', ')), '.'),
        el('p', null, 'Tasks left without any replica: ',
          el('strong', { id: 'whatif-orphans', class: arr(r.tasks_without_replica).length ? 'bad' : 'ok' }, arr(r.tasks_without_replica).length ? arr(r.tasks_without_replica).join(', ') : 'none')),
        rows.length
          ? el('table', { id: 'failover' }, el('caption', null, 'Where each lost active fails over'),
            el('thead', null, el('tr', null, el('th', { scope: 'col' }, 'Task'), el('th', { scope: 'col' }, 'From'), el('th', { scope: 'col' }, 'To'), el('th', { scope: 'col' }, 'How'))),
            el('tbody', null, ...rows))
          : el('p', null, 'No active is lost.'),
        ...(crossZone ? [crossZone] : []),
        replicas);
    }
    if (st.doc) renderGrid(st.doc);
  }

  function renderInstances(d) {
    const now = new Set();
    const rows = d.clients.map((c) => {
      const rd = d.ready.get(c.id);
      let maxStandby = -1;
      let restoring = 0;
      let toGo = 0;
      let seen = 0;
      for (const [, role, k] of d.held.get(c.id) || []) {
        const lag = d.lags.get(k);
        if (role === 's' && lag >= 0) maxStandby = Math.max(maxStandby, lag);
        if ((role === 'a' || role === 'w') && lag > 0) {
          restoring++;
          toGo += lag;
          const first = Math.max(st.restoreSeen.get(k) || 0, lag);
          st.restoreSeen.set(k, first);
          now.add(k);
          seen += first;
        }
      }
      let restore = '—';
      if (restoring) restore = restoring + ' task(s), ' + toGo + ' records to go (' + Math.floor(100 * (1 - toGo / seen)) + '% since seen)';
      return el('tr', null,
        el('th', { scope: 'row', class: 'id' }, d.nameOf(c.id)),
        el('td', { class: 'mono pid' }, c.id),
        el('td', { class: 'mono' }, c.endpoint),
        el('td', { class: 'mono' }, Object.keys(c.tags).sort().map((k) => k + '=' + str(c.tags[k])).join(', ')),
        rd ? el('td', { class: rd.ready ? 'ok' : 'bad' }, rd.ready ? 'ready' : 'not ready: ' + cut(rd.reason, 200)) : el('td', { class: 'bad' }, 'unknown'),
        el('td', null, String(c.active.length)), el('td', null, String(c.standby.length)), el('td', null, String(c.warmup.length)),
        el('td', null, String(c.active.length + c.standby.length)),
        el('td', null, maxStandby >= 0 ? String(maxStandby) : '—'),
        el('td', null, restore));
    });
    for (const k of [...st.restoreSeen.keys()]) if (!now.has(k)) st.restoreSeen.delete(k);
    $('instances').tBodies[0].replaceChildren(...rows);
  }

  function renderHistory() {
    $('history').replaceChildren(...st.history.map((h) => el('li', { class: h.fresh ? 'new' : '' }, clock(h.at) + ' ' + h.text)));
  }

  // ---- controls ----------------------------------------------------------

  function init() {
    $('token-form').addEventListener('submit', (ev) => {
      ev.preventDefault();
      const v = $('token').value.trim();
      if (!v) return;
      sessionStorage.setItem(TOKEN_KEY, v);
      $('token').value = '';
      $('token-form').hidden = true;
      notice('');
      poll();
    });
    $('change-token').addEventListener('click', () => askToken('Enter the instance\'s http.auth.token.'));
    $('lose').addEventListener('change', () => fetchWhatIf($('lose').value));
    showWhatIf(null);
    poll();
  }

  init();
})();
