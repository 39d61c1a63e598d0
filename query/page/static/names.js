// displayNames names the group's instances for people; the page shows the
// process id beside the name. It is `rackstream assign`'s rule
// (cmd/rackstream/names.go): a member is named by its endpoint when that
// is unique in the group, shortened while the names stay unique (the port
// goes when every named member has the same one, then the domain every
// host name shares: rackstream-0.rackstream.prod.svc:8080 reads
// rackstream-0); a member without a unique endpoint is named by its id,
// cut to its shortest unique prefix of at least 8 characters when it is
// longer than 12.
//
// clients: [{id, endpoint}]; returns a Map from id to name. A pure
// function, loaded before app.js; names_test.go runs it under Node.
'use strict';

function displayNames(clients) {
  const uses = new Map();
  for (const c of clients) if (c.endpoint) uses.set(c.endpoint, (uses.get(c.endpoint) || 0) + 1);
  const named = clients.filter((c) => c.endpoint && uses.get(c.endpoint) === 1);
  const names = new Map(named.map((c) => [c.id, c.endpoint]));
  const unique = (xs) => new Set(xs).size === xs.length;

  // The hosts, when every endpoint has the same port.
  let hosts = [];
  let port = null;
  for (const c of named) {
    const m = /^(\[[^\]]+\]|[^:\[\]]+):([0-9]+)$/.exec(c.endpoint);
    if (!m || (port !== null && m[2] !== port)) { hosts = null; break; }
    port = m[2];
    hosts.push(m[1].replace(/^\[(.*)\]$/, '$1'));
  }
  if (hosts && hosts.length > 0 && unique(hosts)) {
    named.forEach((c, i) => names.set(c.id, hosts[i]));
    // Then without the trailing labels every host name shares.
    const isAddress = (h) => h.includes(':') || /^[0-9.]+$/.test(h);
    if (!hosts.some(isAddress)) {
      const labels = hosts.map((h) => h.split('.'));
      let shared = Infinity;
      for (const ls of labels) {
        let n = 0;
        const first = labels[0];
        while (n < ls.length && n < first.length && ls[ls.length - 1 - n] === first[first.length - 1 - n]) n++;
        shared = Math.min(shared, n, ls.length - 1);
      }
      if (shared > 0) {
        const short = labels.map((ls) => ls.slice(0, ls.length - shared).join('.'));
        if (unique(short)) named.forEach((c, i) => names.set(c.id, short[i]));
      }
    }
  }
  const ids = clients.map((c) => c.id);
  for (const c of clients) {
    if (names.has(c.id)) continue;
    const id = c.id;
    let name = id;
    if (id.length > 12) {
      let n = 8;
      while (n < id.length && ids.some((o) => o !== id && o.startsWith(id.slice(0, n)))) n++;
      if (n < id.length) name = id.slice(0, n) + '…';
    }
    names.set(id, name);
  }
  return names;
}

if (typeof module !== 'undefined') module.exports = { displayNames };
